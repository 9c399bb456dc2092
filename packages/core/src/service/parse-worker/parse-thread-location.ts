/** The parse thread's module (node-server's bundle build replaces this file: there it is dist/parse-thread.mjs). */
export const PARSE_THREAD_URL = new URL("./parse-thread.ts", import.meta.url);

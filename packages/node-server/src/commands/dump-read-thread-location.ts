/** The dump read thread's module (the bundle build replaces this file: there it is dist/dump-read-thread.mjs). */
export const DUMP_READ_THREAD_URL = new URL("./dump-read-thread.ts", import.meta.url);

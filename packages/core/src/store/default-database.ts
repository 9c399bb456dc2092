/** The database each runtime opens when none is named: a SQLite file beside the Node server, memory in the Worker. */
export const DEFAULT_DATABASE = { node: "./pemba.db", worker: "memory:" } as const;

/** Pemba's settings: one definition of every PEMBA_* flag and variable, their parsers, resolution and docs. */
export {
  COMPACT_IDLE_MS,
  defaultText,
  helpText,
  LOG_LEVEL_NUMBERS,
  LOG_LEVELS,
  type LogLevel,
  type Runtime,
  SETTINGS,
  type SettingDef,
  type SettingKey,
  type SettingValues,
  settingName,
  settingsOf,
} from "./definition.ts";
export { helpOptionLines, settingsTable } from "./docs.ts";
export { ConfigError, type D1Simulation, parseDuration, parseList, parsePresharedKeys } from "./parsers.ts";
export {
  describeDatabase,
  type Env,
  type Flags,
  type NodeSettings,
  type PembaSettings,
  type ReplicaSettings,
  redactDatabaseUrl,
  replicaSettings,
  resolveNodeSettings,
  resolveSetting,
  resolveWorkerSettings,
  type WorkerSettings,
} from "./resolve.ts";

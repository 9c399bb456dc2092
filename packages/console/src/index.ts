/**
 * @pemba/console: the browser console's built files (generated/assets.ts, built from app/ by scripts/build.ts),
 * which the Node server and the Worker pass to createPemba so that `/console` serves them. Core never imports
 * this package.
 */
import type { ConsoleAssets } from "@pemba/core";
import { CONSOLE_FILES } from "../generated/assets.ts";

export const consoleAssets: ConsoleAssets = { files: CONSOLE_FILES };

/** vitest globalSetup of the console project: builds the `pemba` bundle its tests serve the page with, once. */
import { buildPemba } from "../src/testing/servers.ts";

export default function setup(): void {
  buildPemba();
}

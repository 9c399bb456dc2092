/**
 * A/B alternating on PostgreSQL: `pemba import` of one dump into a new database, then `pemba export` of it, by two
 * builds of the CLI in turn on one throwaway server, for ratios that hold on a shared machine (run it at low
 * priority, e.g. under `nice -n 19`):
 *
 *   node --experimental-strip-types loadtest/bench-dump-ab-pg.ts --a <checkout>/packages/node-server/dist/pemba.mjs \
 *     --b packages/node-server/dist/pemba.mjs --dump d1m.ndjson [--rounds 3]
 *
 * The dump is bench-dump.ts's (`--dump-only FILE`). Per round and side: wall seconds and rows/s (the CLI's count),
 * the CLI's CPU seconds (user + system, /usr/bin/time), the server's CPU seconds (the postmaster and its backends,
 * /proc), peak RSS, and whether the export is the dump's bytes after the header line.
 */

import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { startPostgres } from "@pemba/core/testing/node";
import { bodyHash } from "./lib/dump-files.ts";

const { values } = parseArgs({
  options: {
    a: { type: "string" },
    b: { type: "string" },
    dump: { type: "string" },
    rounds: { type: "string", default: "3" },
  },
});
const sides = { A: resolve(values.a!), B: resolve(values.b!) };
const dump = resolve(values.dump!);
const dir = mkdtempSync(join(tmpdir(), "pemba-ab-pg-"));

/** CPU seconds of the server listening on `port`: the postmaster, its live backends and the ones that ended. */
function serverCpu(port: number): number {
  const tmp = tmpdir();
  for (const d of readdirSync(tmp).filter((n) => n.startsWith("pemba-pg-"))) {
    let pid: string[];
    try {
      pid = readFileSync(join(tmp, d, "data", "postmaster.pid"), "utf8").split("\n");
    } catch {
      continue;
    }
    if (Number(pid[3]) !== port) continue;
    const main = Number(pid[0]);
    const ticks = (p: number, children: boolean) => {
      try {
        const f = readFileSync(`/proc/${p}/stat`, "utf8").split(") ")[1]!.split(" ");
        return Number(f[11]) + Number(f[12]) + (children ? Number(f[13]) + Number(f[14]) : 0);
      } catch {
        return 0;
      }
    };
    const kids = spawnSync("pgrep", ["-P", String(main)], { encoding: "utf8" })
      .stdout.split("\n")
      .filter(Boolean);
    return (ticks(main, true) + kids.reduce((s, k) => s + ticks(Number(k), false), 0)) / 100;
  }
  throw new Error(`no throwaway server on port ${port}`);
}

function timed(cli: string, args: string[]) {
  const r = spawnSync("/usr/bin/time", ["-f", "TIME %e %M %U %S", process.execPath, cli, ...args], {
    encoding: "utf8",
    maxBuffer: 1 << 26,
  });
  const m = /TIME ([\d.]+) (\d+) ([\d.]+) ([\d.]+)\s*$/.exec(r.stderr);
  if (r.status !== 0 || m === null) throw new Error(`pemba ${args.join(" ")}: ${r.stderr}`);
  const rate = /\((\d+) rows\/s\)/.exec(`${r.stdout}${r.stderr}`)?.[1];
  return { rate, wall: Number(m[1]), rssMb: Number(m[2]) / 1024, cpu: Number(m[3]) + Number(m[4]) };
}

const server = await startPostgres();
const port = Number(new URL(server.url).port);
const source = await bodyHash(dump);
let n = 0;
try {
  for (let round = 1; round <= Number(values.rounds); round++) {
    for (const [side, cli] of Object.entries(sides)) {
      const name = `ab_${n++}`;
      spawnSync("psql", [server.url, "-qc", `CREATE DATABASE ${name}`]);
      const db = server.url.replace(/\/postgres$/, `/${name}`);
      const load = () => readFileSync("/proc/loadavg", "utf8").split(" ")[0];
      let s0 = serverCpu(port);
      const imp = timed(cli, [
        "import",
        "--database",
        db,
        "--tenant",
        "bench",
        "--checkpoint",
        join(dir, "ck"),
        dump,
      ]);
      const impServer = serverCpu(port) - s0;
      console.log(
        `round ${round} ${side} import: ${imp.wall} s wall, ${imp.rate} rows/s, CLI ${imp.cpu.toFixed(2)} CPU s, server ${impServer.toFixed(2)} CPU s, peak RSS ${imp.rssMb.toFixed(0)} MB, load ${load()}`,
      );
      const out = join(dir, `${name}.ndjson`);
      s0 = serverCpu(port);
      const exp = timed(cli, ["export", "--database", db, "--tenant", "bench", "-o", out]);
      const expServer = serverCpu(port) - s0;
      const same = (await bodyHash(out)) === source;
      console.log(
        `round ${round} ${side} export: ${exp.wall} s wall, ${exp.rate} rows/s, CLI ${exp.cpu.toFixed(2)} CPU s, server ${expServer.toFixed(2)} CPU s, peak RSS ${exp.rssMb.toFixed(0)} MB, ${same ? "the dump's bytes" : "DIFFERENT"}, load ${load()}`,
      );
      rmSync(out);
    }
  }
} finally {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}

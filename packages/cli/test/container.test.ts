/**
 * The Dockerfile, built and run with podman: from the packed CLI (the build context holds the Dockerfile, its
 * .dockerignore and the tarball at packages/cli/, as `npm pack` in a clone leaves it), on a local Node 22 base image
 * passed as NODE_IMAGE. The container runs as a non-root user, answers its HEALTHCHECK, takes its settings from the
 * environment, and keeps its SQLite file on the /data volume: a schema and a relationship written before the
 * container is stopped and replaced are answered by the next container on the same volume.
 */
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, packCli, REPO_DIR, run, runOk } from "./commands.ts";
import { nodeBaseImage, onPath, podmanEnv } from "./podman.ts";

const KEY = "container-test-key";
const CAN_BUILD = onPath("podman") && onPath("mmdebstrap");

describe.skipIf(!CAN_BUILD)(
  "container image (podman build of the Dockerfile; needs podman and mmdebstrap)",
  () => {
    const name = `pemba-test-${process.pid}`;
    const image = `localhost/${name}:latest`;
    const volume = `${name}-data`;
    let tmp: string;
    let env: NodeJS.ProcessEnv;
    let port: number;
    let buildStages: string[] = [];

    const podman = (...args: string[]) => runOk("podman", args, { env });
    const api = async (path: string, body: unknown) => {
      const res = await fetch(`http://127.0.0.1:${port}/v1/tenants/t1/${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${KEY}` },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const check = () =>
      api("permissions/check", {
        metadata: { depth: 20 },
        entity: { type: "doc", id: "1" },
        permission: "edit",
        subject: { type: "user", id: "alice" },
      });
    /** Starts a container of the image on the volume; resolves once /healthz answers through the published port. */
    const start = async (container: string) => {
      await podman(
        "run",
        "--detach",
        "--name",
        container,
        "--publish",
        `127.0.0.1:${port}:3476`,
        "--volume",
        `${volume}:/data`,
        "--env",
        `PEMBA_AUTH_KEYS=${KEY}`,
        "--env",
        "PEMBA_SCHEMA_WRITES=safe",
        image,
      );
      for (let i = 0; i < 300; i++) {
        const up = await fetch(`http://127.0.0.1:${port}/healthz`).then(
          (r) => r.ok,
          () => false,
        );
        if (up) return;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`container ${container} never answered /healthz:\n${await podman("logs", container)}`);
    };

    beforeAll(async () => {
      tmp = mkdtempSync(join(tmpdir(), "pemba-container-"));
      env = podmanEnv(tmp);
      port = await freePort();
      const context = join(tmp, "context");
      mkdirSync(join(context, "packages/cli"), { recursive: true });
      const tarball = packCli(tmp);
      copyFileSync(tarball, join(context, "packages/cli", basename(tarball)));
      for (const f of ["Dockerfile", ".dockerignore"]) copyFileSync(join(REPO_DIR, f), join(context, f));
      const base = await nodeBaseImage(env);
      const dangling = async () =>
        (await podman("images", "--quiet", "--filter", "dangling=true")).split("\n");
      const before = new Set(await dangling());
      await podman("build", "--format", "docker", "--build-arg", `NODE_IMAGE=${base}`, "-t", image, context);
      // the build stage stays behind as an untagged image: removed with the test's own image
      buildStages = (await dangling()).filter((id) => id !== "" && !before.has(id));
      await podman("volume", "create", volume);
    });

    afterAll(async () => {
      if (env === undefined) return;
      for (const c of [`${name}-1`, `${name}-2`]) await run("podman", ["rm", "--force", c], { env });
      await run("podman", ["volume", "rm", "--force", volume], { env });
      await run("podman", ["rmi", "--force", image, ...buildStages], { env });
      rmSync(tmp, { recursive: true, force: true });
    });

    it("the image: a non-root user, a HEALTHCHECK on /healthz, /data as a volume, SQLite there by default", async () => {
      const [inspected] = JSON.parse(await podman("image", "inspect", image)) as [
        {
          Config: {
            User: string;
            Volumes: Record<string, unknown>;
            Env: string[];
            Entrypoint: string[];
            Cmd: string[];
          };
          Healthcheck: { Test: string[] };
        },
      ];
      const { Config: config, Healthcheck: health } = inspected;
      expect(config.User).toBe("pemba");
      expect(health.Test.slice(0, 3)).toEqual(["CMD", "node", "-e"]);
      expect(health.Test[3]).toContain("/healthz");
      expect(Object.keys(config.Volumes)).toEqual(["/data"]);
      expect(config.Env).toContain("PEMBA_DATABASE=/data/pemba.db");
      expect(config.Env).toContain("PEMBA_HOST=0.0.0.0");
      expect([...config.Entrypoint, ...config.Cmd]).toEqual([
        "node",
        "/opt/pemba/node_modules/@pemba/cli/dist/pemba.mjs",
        "serve",
      ]);
      // the runtime stage has the installed package and its addon, not the tarball the build stage installed from
      const files =
        "test ! -e /tmp/pemba-cli.tgz && test -f /opt/pemba/node_modules/better-sqlite3/package.json";
      expect(
        (await run("podman", ["run", "--rm", "--entrypoint", "sh", image, "-c", files], { env })).code,
      ).toBe(0);
    });

    it("runs as pemba, healthy, with settings from the environment; the data survives a new container", async () => {
      const first = `${name}-1`;
      await start(first);
      expect((await podman("exec", first, "id", "-un")).trim()).toBe("pemba");
      expect((await run("podman", ["healthcheck", "run", first], { env })).code).toBe(0);

      // PEMBA_AUTH_KEYS from the environment: without the key the API refuses
      const anonymous = await fetch(`http://127.0.0.1:${port}/v1/tenants/t1/schemas/list`, {
        method: "POST",
        body: "{}",
      });
      expect(anonymous.status).toBe(500);
      expect(await anonymous.json()).toMatchObject({ message: "ERROR_CODE_MISSING_BEARER_TOKEN" });

      const schema = "entity user {}\nentity doc { relation owner @user\n permission edit = owner }";
      expect((await api("schemas/write", { schema })).status).toBe(200);
      const written = await api("data/write", {
        metadata: {},
        tuples: [
          { entity: { type: "doc", id: "1" }, relation: "owner", subject: { type: "user", id: "alice" } },
        ],
      });
      expect(written.status).toBe(200);
      expect((await check()).body.can).toBe("CHECK_RESULT_ALLOWED");
      // PEMBA_SCHEMA_WRITES=safe from the environment: a write that would orphan the tuple is refused
      const orphaning = await api("schemas/write", { schema: "entity user {}\nentity doc {}" });
      expect(orphaning.status).toBe(400);

      // SIGTERM: pemba closes the database and exits 0
      await podman("stop", "--time", "20", first);
      expect((await podman("inspect", "--format", "{{.State.ExitCode}}", first)).trim()).toBe("0");
      await podman("rm", first);

      const second = `${name}-2`;
      await start(second);
      expect((await check()).body).toEqual({ can: "CHECK_RESULT_ALLOWED", metadata: { check_count: 2 } });
      const schemas = await api("schemas/list", {});
      expect((schemas.body.schemas as unknown[]).length).toBe(1);
      expect((await podman("exec", second, "ls", "/data")).split("\n")).toContain("pemba.db");
    });
  },
);

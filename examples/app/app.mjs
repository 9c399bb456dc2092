/**
 * A small app that asks Pemba before it answers: documents that their owner shares. Plain Node 22, no dependency;
 * it talks to Pemba's HTTP API (Permify's) with fetch.
 *
 *   node examples/app/app.mjs        # with `pemba serve` running; PEMBA_URL, PEMBA_TOKEN, PEMBA_TENANT, PORT
 *
 * At start it writes the model of examples/main.perm to its tenant (t1 unless PEMBA_TENANT says otherwise) and
 * makes alice the owner of doc 1. Then, the caller named by the `x-user` header:
 *   GET  /docs/:id                 200 and the document when Pemba answers `view`, else 403
 *   POST /docs/:id/viewers/:user   204 after writing `doc:<id>#viewer@user:<user>`, when the caller may `edit` it;
 *                                  else 403
 */
import { readFileSync } from "node:fs";
import { createServer } from "node:http";

const PEMBA = process.env.PEMBA_URL ?? "http://127.0.0.1:3476";
const TENANT = process.env.PEMBA_TENANT ?? "t1";
const PORT = Number(process.env.PORT ?? 3000);

/** One call to Pemba's API; throws with Pemba's error message on a non-2xx answer. */
async function pemba(path, body) {
  const headers = { "content-type": "application/json" };
  if (process.env.PEMBA_TOKEN) headers.authorization = `Bearer ${process.env.PEMBA_TOKEN}`;
  const res = await fetch(`${PEMBA}/v1/tenants/${TENANT}/${path}`, {
    method: "POST",
    headers,
    body: JSON.stringify(body),
  });
  const answer = await res.json();
  if (!res.ok) throw new Error(`pemba ${path}: ${res.status} ${answer.message}`);
  return answer;
}

const tuple = (id, relation, user) => ({
  entity: { type: "doc", id },
  relation,
  subject: { type: "user", id: user },
});

/** Whether `user` has `permission` on doc `id`. */
async function can(user, permission, id) {
  const answer = await pemba("permissions/check", {
    metadata: { depth: 20 },
    entity: { type: "doc", id },
    permission,
    subject: { type: "user", id: user },
  });
  return answer.can === "CHECK_RESULT_ALLOWED";
}

const schema = readFileSync(new URL("../main.perm", import.meta.url), "utf8");
await pemba("schemas/write", { schema });
await pemba("data/write", { metadata: {}, tuples: [tuple("1", "owner", "alice")] });

const server = createServer(async (req, res) => {
  const send = (status, text = "") => {
    res.writeHead(status, { "content-type": "text/plain; charset=utf-8" });
    res.end(text);
  };
  try {
    const user = req.headers["x-user"];
    if (typeof user !== "string" || user === "") return send(401, "x-user header missing\n");
    const read = /^\/docs\/(\w+)$/.exec(req.url ?? "");
    if (req.method === "GET" && read) {
      if (!(await can(user, "view", read[1]))) return send(403, "forbidden\n");
      return send(200, `doc ${read[1]}\n`);
    }
    const share = /^\/docs\/(\w+)\/viewers\/(\w+)$/.exec(req.url ?? "");
    if (req.method === "POST" && share) {
      if (!(await can(user, "edit", share[1]))) return send(403, "forbidden\n");
      await pemba("data/write", { metadata: {}, tuples: [tuple(share[1], "viewer", share[2])] });
      return send(204);
    }
    send(404, "not found\n");
  } catch (e) {
    send(502, `${e.message}\n`);
  }
});
server.listen(PORT, "127.0.0.1", () => {
  console.log(
    `app listening on http://127.0.0.1:${server.address().port} (Pemba at ${PEMBA}, tenant ${TENANT})`,
  );
});
process.on("SIGTERM", () => server.close());

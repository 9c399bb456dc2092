/** Tiny helpers to talk to a running server the way clients do (real HTTP). */
export const TEST_SCHEMA = `entity user {}
entity document {
  relation owner @user
  relation viewer @user
  permission edit = owner
  permission view = owner or viewer
}
`;

export async function post(url: string, path: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

export async function writeSchema(url: string, schema = TEST_SCHEMA): Promise<string> {
  const r = await post(url, "/v1/tenants/t1/schemas/write", { schema });
  if (r.status !== 200) throw new Error(`schema write: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.schema_version as string;
}

export function tuple(entity: string, relation: string, subject: string) {
  const [et, ei] = entity.split(":");
  const [st, si] = subject.split(":");
  return { entity: { type: et, id: ei }, relation, subject: { type: st, id: si, relation: "" } };
}

export async function writeTuples(url: string, tuples: ReturnType<typeof tuple>[]): Promise<string> {
  const r = await post(url, "/v1/tenants/t1/data/write", { metadata: { schema_version: "" }, tuples });
  if (r.status !== 200) throw new Error(`data write: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.snap_token as string;
}

export function checkBody(entity: string, permission: string, subject: string) {
  const [et, ei] = entity.split(":");
  const [st, si] = subject.split(":");
  return {
    metadata: { schema_version: "", snap_token: "", depth: 20 },
    entity: { type: et, id: ei },
    permission,
    subject: { type: st, id: si, relation: "" },
  };
}

export async function check(
  url: string,
  entity: string,
  permission: string,
  subject: string,
): Promise<string> {
  const r = await post(url, "/v1/tenants/t1/permissions/check", checkBody(entity, permission, subject));
  if (r.status !== 200) throw new Error(`check: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.can as string;
}

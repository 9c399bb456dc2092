/**
 * Where the console's questions go. Playground: a PembaService on a MemoryStore in this page (the real engine, no
 * server). Live: a tenant of the server that served the page, over its HTTP API with the key typed into the page.
 * Both answer in @pemba/core's model types, so every view works the same in either mode.
 */
import {
  type Attribute,
  attributeValueFromWire,
  attributeValueToWire,
  type CheckOutcome,
  type Entity,
  type ExplainResponse,
  explainToWire,
  MemoryStore,
  PembaService,
  type Subject,
  type Tuple,
} from "@pemba/core";

export interface Listing<T> {
  items: T[];
  /** "" on the last page. */
  next: string;
}

export interface CheckInput {
  entity: Entity;
  permission: string;
  subject: Subject;
  depth: number;
}

export interface Backend {
  readonly mode: "playground" | "live";
  writeSchema(text: string): Promise<void>;
  readTuples(entityType: string, pageSize: number, token: string): Promise<Listing<Tuple>>;
  readAttributes(entityType: string, pageSize: number, token: string): Promise<Listing<Attribute>>;
  write(tuples: Tuple[], attributes: Attribute[]): Promise<void>;
  deleteTuple(t: Tuple): Promise<void>;
  deleteAttribute(a: Attribute): Promise<void>;
  check(q: CheckInput): Promise<CheckOutcome>;
  explain(q: CheckInput): Promise<ExplainResponse>;
  lookupEntity(entityType: string, permission: string, subject: Subject, depth: number): Promise<string[]>;
  lookupSubject(
    entity: Entity,
    permission: string,
    reference: { type: string; relation: string },
    depth: number,
  ): Promise<string[]>;
}

const PAGE = 1000;

/** Every item of a paged answer: `read` gets "" and then each page's next token, until one is "". */
export async function allPages<T>(read: (token: string) => Promise<Listing<T>>): Promise<T[]> {
  const out: T[] = [];
  let token = "";
  do {
    const page = await read(token);
    out.push(...page.items);
    token = page.next;
  } while (token !== "");
  return out;
}

const tupleFilter = (t: Tuple) => ({
  entity: { type: t.entity.type, ids: [t.entity.id] },
  relation: t.relation,
  subject: { type: t.subject.type, ids: [t.subject.id], relation: t.subject.relation },
});

const attributeFilter = (a: Attribute) => ({
  entity: { type: a.entity.type, ids: [a.entity.id] },
  attributes: [a.attribute],
});

export class PlaygroundBackend implements Backend {
  readonly mode = "playground";
  readonly tenant = "t1";
  readonly store = new MemoryStore();
  readonly service = new PembaService(this.store);

  async writeSchema(text: string): Promise<void> {
    await this.service.writeSchema(this.tenant, text);
  }

  async readTuples(entityType: string, pageSize: number, token: string): Promise<Listing<Tuple>> {
    const filter = entityType === "" ? {} : { entity: { type: entityType } };
    const page = await this.service.readRelationships(this.tenant, "", filter, pageSize, token);
    return { items: page.items, next: page.cursor };
  }

  async readAttributes(entityType: string, pageSize: number, token: string): Promise<Listing<Attribute>> {
    const filter = entityType === "" ? {} : { entity: { type: entityType } };
    const page = await this.service.readAttributes(this.tenant, "", filter, pageSize, token);
    return { items: page.items, next: page.cursor };
  }

  async write(tuples: Tuple[], attributes: Attribute[]): Promise<void> {
    await this.service.writeData(this.tenant, "", tuples, attributes);
  }

  async deleteTuple(t: Tuple): Promise<void> {
    await this.service.deleteData(this.tenant, tupleFilter(t), {});
  }

  async deleteAttribute(a: Attribute): Promise<void> {
    await this.service.deleteData(this.tenant, {}, attributeFilter(a));
  }

  async check(q: CheckInput): Promise<CheckOutcome> {
    return this.service.check(this.tenant, meta(q.depth), q);
  }

  async explain(q: CheckInput): Promise<ExplainResponse> {
    return explainToWire(await this.service.explain(this.tenant, meta(q.depth), q));
  }

  lookupEntity(entityType: string, permission: string, subject: Subject, depth: number) {
    return allPages(async (token) => {
      const page = await this.service.lookupEntity(this.tenant, meta(depth), {
        entityType,
        permission,
        subject,
        pageSize: PAGE,
        continuousToken: token || undefined,
      });
      return { items: page.entityIds, next: page.continuousToken };
    });
  }

  lookupSubject(
    entity: Entity,
    permission: string,
    subjectReference: { type: string; relation: string },
    depth: number,
  ) {
    return allPages(async (token) => {
      const page = await this.service.lookupSubject(this.tenant, meta(depth), {
        entity,
        permission,
        subjectReference,
        pageSize: PAGE,
        continuousToken: token || undefined,
      });
      return { items: page.subjectIds, next: page.continuousToken };
    });
  }
}

const meta = (depth: number) => ({ snapToken: "", schemaVersion: "", depth });

/** An error answer of the API: its `code` and `message` (Permify's error body). */
export class ApiError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

interface WireTuple {
  entity: Entity;
  relation: string;
  subject: { type: string; id: string; relation?: string };
}

const tupleToWire = (t: Tuple) => ({ entity: t.entity, relation: t.relation, subject: t.subject });
const tupleFromWire = (t: WireTuple): Tuple => ({
  entity: t.entity,
  relation: t.relation,
  subject: { type: t.subject.type, id: t.subject.id, relation: t.subject.relation ?? "" },
});
const attributeToWire = (a: Attribute) => ({
  entity: a.entity,
  attribute: a.attribute,
  value: attributeValueToWire(a.value),
});

export class LiveBackend implements Backend {
  readonly mode = "live";
  /** The API's base URL: the folder the page was served from. */
  readonly base: URL;
  readonly tenant: string;
  /** Kept in this object only: never stored, never put in the URL. */
  readonly key: string;
  constructor(base: URL, tenant: string, key: string) {
    this.base = base;
    this.tenant = tenant;
    this.key = key;
  }

  async call<T>(path: string, body: unknown): Promise<T> {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (this.key !== "") headers.authorization = `Bearer ${this.key}`;
    const url = new URL(`v1/tenants/${encodeURIComponent(this.tenant)}/${path}`, this.base);
    const response = await fetch(url, { method: "POST", headers, body: JSON.stringify(body) });
    const text = await response.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new ApiError(response.status, `HTTP ${response.status}: ${text.slice(0, 200)}`);
    }
    if (!response.ok) {
      const error = json as { code?: number; message?: string };
      throw new ApiError(response.status, `HTTP ${response.status} (code ${error.code}): ${error.message}`);
    }
    return json as T;
  }

  async writeSchema(text: string): Promise<void> {
    await this.call("schemas/write", { schema: text });
  }

  async readTuples(entityType: string, pageSize: number, token: string): Promise<Listing<Tuple>> {
    const answer = await this.call<{ tuples: WireTuple[]; continuous_token: string }>(
      "data/relationships/read",
      {
        metadata: { snap_token: "" },
        filter: {
          entity: { type: entityType, ids: [] },
          relation: "",
          subject: { type: "", ids: [], relation: "" },
        },
        page_size: pageSize,
        continuous_token: token,
      },
    );
    return { items: answer.tuples.map(tupleFromWire), next: answer.continuous_token };
  }

  async readAttributes(entityType: string, pageSize: number, token: string): Promise<Listing<Attribute>> {
    const answer = await this.call<{
      attributes: {
        entity: Entity;
        attribute: string;
        value: Parameters<typeof attributeValueFromWire>[0];
      }[];
      continuous_token: string;
    }>("data/attributes/read", {
      metadata: { snap_token: "" },
      filter: { entity: { type: entityType, ids: [] }, attributes: [] },
      page_size: pageSize,
      continuous_token: token,
    });
    return {
      items: answer.attributes.map((a) => ({
        entity: a.entity,
        attribute: a.attribute,
        value: attributeValueFromWire(a.value),
      })),
      next: answer.continuous_token,
    };
  }

  async write(tuples: Tuple[], attributes: Attribute[]): Promise<void> {
    await this.call("data/write", {
      metadata: { schema_version: "" },
      tuples: tuples.map(tupleToWire),
      attributes: attributes.map(attributeToWire),
    });
  }

  async deleteTuple(t: Tuple): Promise<void> {
    await this.call("data/delete", { tuple_filter: tupleFilter(t), attribute_filter: {} });
  }

  async deleteAttribute(a: Attribute): Promise<void> {
    await this.call("data/delete", { tuple_filter: {}, attribute_filter: attributeFilter(a) });
  }

  #checkBody(q: CheckInput) {
    return {
      metadata: { snap_token: "", schema_version: "", depth: q.depth },
      entity: q.entity,
      permission: q.permission,
      subject: q.subject,
    };
  }

  async check(q: CheckInput): Promise<CheckOutcome> {
    const answer = await this.call<{ can: CheckOutcome["can"]; metadata: { check_count: number } }>(
      "permissions/check",
      this.#checkBody(q),
    );
    return { can: answer.can, checkCount: answer.metadata.check_count };
  }

  async explain(q: CheckInput): Promise<ExplainResponse> {
    return this.call<ExplainResponse>("permissions/explain", this.#checkBody(q));
  }

  lookupEntity(entityType: string, permission: string, subject: Subject, depth: number) {
    return allPages(async (token) => {
      const answer = await this.call<{ entity_ids: string[]; continuous_token: string }>(
        "permissions/lookup-entity",
        {
          metadata: { snap_token: "", schema_version: "", depth },
          entity_type: entityType,
          permission,
          subject,
          page_size: PAGE,
          continuous_token: token,
        },
      );
      return { items: answer.entity_ids, next: answer.continuous_token };
    });
  }

  lookupSubject(
    entity: Entity,
    permission: string,
    reference: { type: string; relation: string },
    depth: number,
  ) {
    return allPages(async (token) => {
      const answer = await this.call<{ subject_ids: string[]; continuous_token: string }>(
        "permissions/lookup-subject",
        {
          metadata: { snap_token: "", schema_version: "", depth },
          entity,
          permission,
          subject_reference: reference,
          page_size: PAGE,
          continuous_token: token,
        },
      );
      return { items: answer.subject_ids, next: answer.continuous_token };
    });
  }
}

/**
 * The working-set replica's property: at any snap, every check, lookup and engine read answered through the
 * replica equals the store's own answer. A seeded random run of writes, deletes (exact and by filter), expiring
 * rows and expiry sweeps, GC, schema changes, and a budget small enough that keys are evicted all the time, with
 * comparisons at random snaps (recent ones mostly, expired ones too). Runtime-neutral (no Node built-in, no test
 * framework): the Node tests run it over memory, SQLite and PostgreSQL, and workerd over D1. A fifth of the writes go
 * to the store directly, as another process's: the replica sees them through the snap tokens that name them.
 */
import type { Attribute, Tuple } from "../../model.ts";
import { seededRandom } from "../../random.ts";
import type { Snap, Store, WriteRequest } from "../../store/store.ts";
import { PembaService } from "../pemba-service.ts";

export interface ReplicaPropertyOptions {
  /** The store the replica is in front of, with tenant "t1" (empty). */
  inner: Store;
  /** The replica in front of `inner` (its writes and GC go through it). */
  replica: Store;
  /** Seed of the run (the same seed, the same operations). */
  seed: number;
  /** Operations in the run. */
  steps: number;
  /** The working set's evictions so far (to report that the budget was small enough). */
  evictions?: () => number;
  /**
   * Whole-tenant preloading of "t1" (ReplicaStore.preload): started every 7th step and left running while the next
   * operations (writes, GC, schema changes, comparisons) go on; every run is awaited before the property returns.
   */
  preload?: () => Promise<unknown>;
}

/** What a run did: comparisons made, and operations of each kind. */
export interface ReplicaPropertyCounts {
  checks: number;
  lookups: number;
  reads: number;
  writes: number;
  deletes: number;
  sweeps: number;
  gcs: number;
  schemas: number;
  expiredSnaps: number;
  evictions: number;
  /** Preloads started. */
  preloads: number;
}

const SCHEMA_A = `entity user {}
entity group {
  relation member @user @group#member
}
entity folder {
  relation owner @user
  relation viewer @user @group#member
}
entity doc {
  relation parent @folder
  relation owner @user
  relation viewer @user @group#member
  attribute public boolean
  permission edit = owner or parent.owner
  permission view = edit or viewer or parent.viewer or public
}`;

/** The same types, other permissions: a schema change the checks read through. */
const SCHEMA_B = `entity user {}
entity group {
  relation member @user @group#member
}
entity folder {
  relation owner @user
  relation viewer @user @group#member
}
entity doc {
  relation parent @folder
  relation owner @user
  relation viewer @user @group#member
  attribute public boolean
  permission edit = owner
  permission view = (viewer or parent.viewer) not owner
}`;

const T0 = Date.UTC(2030, 0, 1);

/** Runs the property; throws an Error naming the step, the snap and both answers at the first difference. */
export async function replicaProperty(opts: ReplicaPropertyOptions): Promise<ReplicaPropertyCounts> {
  const { inner, replica } = opts;
  const rand = seededRandom(opts.seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rand() * list.length)]!;
  const int = (n: number) => Math.floor(rand() * n);
  let now = T0;
  const clock = () => now;
  const viaReplica = new PembaService(replica, { clock });
  const viaStore = new PembaService(inner, { clock });
  const counts: ReplicaPropertyCounts = {
    checks: 0,
    lookups: 0,
    reads: 0,
    writes: 0,
    deletes: 0,
    sweeps: 0,
    gcs: 0,
    schemas: 0,
    expiredSnaps: 0,
    evictions: 0,
    preloads: 0,
  };
  const versions = [await viaReplica.writeSchema("t1", SCHEMA_A)];
  const snaps: Snap[] = [await replica.headSnap("t1")];
  const live: Tuple[] = [];
  const users = ["1", "2", "3", "4"];
  const docs = ["1", "2", "3", "4", "5"];
  const subject = (): Tuple["subject"] => {
    const r = rand();
    if (r < 0.7) return { type: "user", id: pick(users), relation: "" };
    return { type: "group", id: pick(["g1", "g2"]), relation: "member" };
  };
  const expiry = (): number | undefined => (rand() < 0.25 ? now + (int(5) - 1) * 1000 : undefined);
  const randomTuple = (): Tuple => {
    const r = rand();
    let t: Tuple;
    if (r < 0.35) t = { entity: { type: "doc", id: pick(docs) }, relation: "viewer", subject: subject() };
    else if (r < 0.5) {
      t = {
        entity: { type: "doc", id: pick(docs) },
        relation: "owner",
        subject: { type: "user", id: pick(users), relation: "" },
      };
    } else if (r < 0.65) {
      t = {
        entity: { type: "doc", id: pick(docs) },
        relation: "parent",
        subject: { type: "folder", id: pick(["f1", "f2"]), relation: "" },
      };
    } else if (r < 0.8)
      t = {
        entity: { type: "folder", id: pick(["f1", "f2"]) },
        relation: pick(["owner", "viewer"]),
        subject: subject(),
      };
    else t = { entity: { type: "group", id: pick(["g1", "g2"]) }, relation: "member", subject: subject() };
    if (t.entity.type === "folder" && t.relation === "owner")
      t.subject = { type: "user", id: pick(users), relation: "" };
    const e = expiry();
    if (e !== undefined) t.expiresAt = e;
    return t;
  };
  const randomAttribute = (): Attribute => {
    const a: Attribute = {
      entity: { type: "doc", id: pick(docs) },
      attribute: "public",
      value: { type: "ATTRIBUTE_TYPE_BOOLEAN", data: rand() < 0.5 },
    };
    const e = expiry();
    if (e !== undefined) a.expiresAt = e;
    return a;
  };
  /** A write through the replica, or now and then straight to the store (another process's write). */
  const write = async (req: WriteRequest) => {
    snaps.push(await (rand() < 0.2 ? inner : replica).write("t1", req));
  };

  const fail = (step: number, what: string, snap: Snap, got: unknown, want: unknown): never => {
    throw new Error(
      `seed ${opts.seed} step ${step}: ${what} at snap ${snap} (now ${now - T0}): replica ${JSON.stringify(got)}, store ${JSON.stringify(want)}`,
    );
  };
  const outcome = async (run: () => unknown): Promise<unknown> => {
    try {
      return await run();
    } catch (e) {
      return { error: (e as { code?: string }).code ?? String(e) };
    }
  };
  const tupleKeys = (list: Tuple[]) =>
    list
      .map(
        (t) =>
          `${t.entity.type}:${t.entity.id}#${t.relation}@${t.subject.type}:${t.subject.id}#${t.subject.relation}`,
      )
      .sort();
  const attributeKeys = (list: Attribute[]) =>
    list.map((a) => `${a.entity.type}:${a.entity.id}$${a.attribute}=${JSON.stringify(a.value.data)}`).sort();

  async function compare(step: number): Promise<void> {
    // recent snaps mostly (the hot path), now and then any snap (older than keys' fills, or expired)
    const snap = rand() < 0.7 ? snaps[snaps.length - 1 - int(Math.min(3, snaps.length))]! : pick(snaps);
    const token = viaStore.snapTokenOf("t1", snap);
    const schemaVersion = pick(versions);
    const meta = { schemaVersion, snapToken: token, depth: 20 };
    const queries = Array.from({ length: 6 }, () => ({
      entity: { type: "doc", id: pick(docs) },
      permission: pick(["view", "edit"]),
      subject: { type: "user", id: pick(users), relation: "" },
    }));
    // the replica's checks at once (their reads of missing keys may go out joined in one statement), each then
    // compared with the store's answer
    const gots = await Promise.all(
      queries.map((query) => outcome(async () => (await viaReplica.check("t1", meta, query)).can)),
    );
    for (const [i, query] of queries.entries()) {
      const got = gots[i];
      const want = await outcome(async () => (await viaStore.check("t1", meta, query)).can);
      if (JSON.stringify(got) !== JSON.stringify(want))
        fail(step, `check ${JSON.stringify(query)}`, snap, got, want);
      if (typeof want === "object") counts.expiredSnaps++;
      counts.checks++;
    }
    const user = { type: "user", id: pick(users), relation: "" };
    const entities = { entityType: "doc", permission: "view", subject: user, pageSize: 100 };
    const gotE = await outcome(async () =>
      (await viaReplica.lookupEntity("t1", meta, entities)).entityIds.sort(),
    );
    const wantE = await outcome(async () =>
      (await viaStore.lookupEntity("t1", meta, entities)).entityIds.sort(),
    );
    if (JSON.stringify(gotE) !== JSON.stringify(wantE)) fail(step, "lookupEntity", snap, gotE, wantE);
    const subjects = {
      entity: { type: "doc", id: pick(docs) },
      permission: pick(["view", "edit"]),
      subjectReference: { type: "user", relation: "" },
      pageSize: 100,
    };
    const gotS = await outcome(async () =>
      (await viaReplica.lookupSubject("t1", meta, subjects)).subjectIds.sort(),
    );
    const wantS = await outcome(async () =>
      (await viaStore.lookupSubject("t1", meta, subjects)).subjectIds.sort(),
    );
    if (JSON.stringify(gotS) !== JSON.stringify(wantS)) fail(step, "lookupSubject", snap, gotS, wantS);
    counts.lookups += 2;
    // the engine reads themselves, at the store's GC-readable snaps
    const readable = await outcome(async () => {
      await inner.assertSnapReadable("t1", snap);
      return true;
    });
    if (readable !== true) return;
    const ids = docs.filter(() => rand() < 0.6);
    const tq = [{ entityType: "doc", entityIds: ids, relations: ["viewer", "owner", "parent"] }];
    const sq = [
      {
        entityType: "doc",
        relations: ["viewer"],
        subjectType: "user",
        subjectIds: users.filter(() => rand() < 0.5),
        subjectRelation: "",
      },
    ];
    const aq =
      rand() < 0.3
        ? [{ entityType: "doc", attributes: ["public"] }]
        : [{ entityType: "doc", entityIds: ids, attributes: ["public"] }];
    const pairs: [string, () => unknown, () => unknown, (r: never) => string[]][] = [
      [
        "queryTuples",
        () => replica.queryTuples("t1", snap, tq, now),
        () => inner.queryTuples("t1", snap, tq, now),
        tupleKeys as never,
      ],
      [
        "querySubjectTuples",
        () => replica.querySubjectTuples("t1", snap, sq, now),
        () => inner.querySubjectTuples("t1", snap, sq, now),
        tupleKeys as never,
      ],
      [
        "queryAttributes",
        () => replica.queryAttributes("t1", snap, aq, now),
        () => inner.queryAttributes("t1", snap, aq, now),
        attributeKeys as never,
      ],
    ];
    for (const [name, a, b, norm] of pairs) {
      const got = norm((await a()) as never);
      const wantRows = norm((await b()) as never);
      if (JSON.stringify(got) !== JSON.stringify(wantRows)) fail(step, name, snap, got, wantRows);
      counts.reads++;
    }
  }

  const preloads: Promise<unknown>[] = [];
  for (let step = 0; step < opts.steps; step++) {
    if (opts.preload !== undefined && step % 7 === 0) {
      // not awaited: the preload's fills race the operations that follow (its errors fail the run at the end)
      preloads.push(opts.preload());
      counts.preloads++;
    }
    const r = rand();
    if (r < 0.3) {
      const tuples = Array.from({ length: 1 + int(3) }, randomTuple);
      const attributes = rand() < 0.4 ? [randomAttribute()] : [];
      await write({ tuples, attributes });
      live.push(...tuples);
      counts.writes++;
    } else if (r < 0.42) {
      if (live.length === 0) continue;
      const gone = Array.from({ length: 1 + int(2) }, () => live.splice(int(live.length), 1)[0]!).filter(
        Boolean,
      );
      const byFilter = rand() < 0.3;
      await write({
        deleteTuples: byFilter ? [] : gone,
        deleteTupleFilters: byFilter
          ? [{ entity: { type: "doc", ids: [pick(docs)] }, relation: pick(["viewer", "owner"]) }]
          : [],
        deleteAttributes:
          rand() < 0.3 ? [{ entity: { type: "doc", id: pick(docs) }, attribute: "public" }] : [],
      });
      counts.deletes++;
    } else if (r < 0.47) {
      now += int(3000);
    } else if (r < 0.5) {
      await write({ expireUpTo: now });
      counts.sweeps++;
    } else if (r < 0.52) {
      await replica.gc(new Date(Date.now() + 1000));
      counts.gcs++;
    } else if (r < 0.55) {
      versions.push(await viaReplica.writeSchema("t1", rand() < 0.5 ? SCHEMA_B : SCHEMA_A));
      counts.schemas++;
    } else {
      await compare(step);
    }
  }
  await Promise.all(preloads);
  counts.evictions = opts.evictions?.() ?? 0;
  return counts;
}

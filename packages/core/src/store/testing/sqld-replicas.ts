/**
 * Real sqld servers as replicated libSQL is deployed across regions: a primary a region away (a TCP forwarder delays
 * every byte between it and the server under test, and between it and each replica) and replicas near the server,
 * each optionally behind a forwarder that records the requests it was sent.
 */
import { type DelayProxy, startDelayProxy } from "./delay-proxy.ts";
import { type RecordingProxy, recordRequests, type SqldServer, startSqld } from "./sqld-server.ts";

export interface SqldReplicaSetOptions {
  /** How many replicas (default 2). */
  replicas?: number;
  /** One way, between the server under test and the primary (default 20 ms). */
  primaryDelayMs?: number;
  /** One way, between the primary and each replica (default 30 ms): a replica hears a write after its answer. */
  replicationDelayMs?: number;
  /** Put a recording forwarder in front of each replica (default off). */
  record?: boolean;
  /** Runs once the primary is up and before any replica starts (e.g. a migration the replicas then replicate). */
  beforeReplicas?(primary: SqldServer): Promise<void>;
}

export interface SqldReplicaSet {
  primary: SqldServer;
  /** The primary behind its delaying forwarder: the database URL the server under test is given. */
  toPrimary: DelayProxy;
  /** Between the primary and each replica, in replica order (hold one to stop its replication). */
  links: DelayProxy[];
  replicas: SqldServer[];
  /** With `record`: in front of each replica, the requests it was sent. */
  seen: RecordingProxy[];
  /** The replica URLs the server under test is given: the recording forwarders' with `record`. */
  replicaUrls: string[];
  /** Stops every server and forwarder of the set. */
  stop(): Promise<void>;
}

export async function startSqldReplicaSet(options: SqldReplicaSetOptions = {}): Promise<SqldReplicaSet> {
  const links: DelayProxy[] = [];
  const replicas: SqldServer[] = [];
  const seen: RecordingProxy[] = [];
  let primary: SqldServer | undefined;
  let toPrimary: DelayProxy | undefined;
  const stop = async () => {
    for (const r of seen) await r.close();
    for (const r of replicas) await r.stop();
    for (const l of links) await l.close();
    await toPrimary?.close();
    await primary?.stop();
  };
  try {
    primary = await startSqld();
    toPrimary = await startDelayProxy(primary.url, options.primaryDelayMs ?? 20);
    await options.beforeReplicas?.(primary);
    for (let i = 0; i < (options.replicas ?? 2); i++) {
      const link = await startDelayProxy(primary.grpcUrl!, options.replicationDelayMs ?? 30);
      links.push(link);
      const replica = await startSqld({ primaryGrpcUrl: link.url });
      replicas.push(replica);
      if (options.record) seen.push(await recordRequests(replica.url));
    }
  } catch (e) {
    await stop();
    throw e;
  }
  const replicaUrls = (options.record ? seen : replicas).map((r) => r.url);
  return { primary, toPrimary, links, replicas, seen, replicaUrls, stop };
}

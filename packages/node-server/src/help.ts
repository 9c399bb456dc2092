/** `pemba --help` and `pemba --version`. */
import { readFileSync } from "node:fs";
import { DEFAULT_DATABASE, defaultText, helpOptionLines, SETTINGS } from "@pemba/core";

export function pembaVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  return pkg.version;
}

export const HELP_TEXT = `pemba - a Permify-compatible authorization service

Usage:
  pemba serve [options]               run the HTTP API (Permify's v1 API) plus GET /metrics and GET /healthz
  pemba validate <file.yaml> [--unchecked]
                                      run a Permify validation file (schema, relationships, attributes,
                                      scenarios, assertions); exits 1 when any assertion fails
  pemba migrate [--database <url>]    create or upgrade the database tables, then exit
  pemba codegen <schema.perm> [-o <out.ts>]
                                      TypeScript types of a schema for @pemba/sdk's typed client (unknown
                                      entity types, relations, permissions, attributes and disallowed
                                      subject types fail to compile); stdout without -o
  pemba schema diff <old.perm> <new.perm> [--database <url>]
                                      what changing the schema from old to new removes, retypes and flips;
                                      with --database, measured on that database's live data: exits 1 when
                                      it would orphan rows or break stored values
  pemba explain <type:id> <permission> <type:id[#relation]> [options]
                                      ask a running server why a check is ALLOWED or DENIED (Pemba's
                                      explain API) and print the proof as a tree
  pemba decisions <file>... [filters] [--explain]
                                      print the decision log records (--decision-log <file>) that pass the
                                      filters; --explain asks a running server each check again at its snap
                                      token and prints the proof (exit 1 when one decides otherwise)
  pemba load <file.yaml> --url <url> --tenant <id> [--token <key>] [--batch <n>]
                                      write a validation file's schema, relationships and attributes into a
                                      tenant of a running server (created if missing), in batches
  pemba export (--database <url> | --url <server>) [--tenant <id>] [-o <file>]
                                      the tenant's dump at one snap (NDJSON, docs/DUMP.md; gzip when -o
                                      ends in .gz or with --gzip); stdout without -o
  pemba import (--database <url> | --url <server>) [--tenant <id>] <file|->
                                      a dump (gzip or not; - = stdin), or with --from another system's
                                      data, into the tenant: checked, resumable, idempotent
  pemba --help                        this text
  pemba --version                     print the version

serve options (flags override environment variables):
${helpOptionLines()}

  Zero-config default: SQLite file ${DEFAULT_DATABASE.node} on ${defaultText(SETTINGS.host, "node")}:${defaultText(SETTINGS.port, "node")}, no authentication.
  Without --auth-keys or --jwks-url the server refuses to bind anything but a loopback address.
  With a SQL database, checks are answered from an in-memory replica (--replica on): the working set of keys
  checks and lookups read, filled on demand within --replica-memory MB (least recently used keys evicted);
  it sees this process's writes at once and other processes' writes within --replica-refresh, or at once for a
  request that carries their snap token.
  SIGINT/SIGTERM: stop accepting, finish in-flight requests, close the database, exit 0.

validate options:
  --unchecked                         write relationships and attributes without validating them against
                                      the schema

codegen options:
  -o, --out <file.ts>                 write here instead of stdout
  --type-name <Name>                  name of the schema type (default AuthzSchema; the client type is AuthzClient)
  --sdk-import <specifier>            module TypedClient is imported from (default @pemba/sdk)

schema diff options:
  --database <path|url>               measure on this database (a SQLite file, libSQL or postgres:// URL);
                                      without it, the structure only (exit 1 on any removal or type change)
  --tenant <id>                       the tenant whose data is measured (default t1)
  --sample <n>                        pairs asked per changed permission; above it, a seeded sample of n
                                      (default 5000)
  --json                              the JSON of POST /v1/tenants/{t}/schemas/diff instead of text
  --fail-on-flips                     exit 1 also when a decision flips
explain options:
  --url <url>                         the server (default http://127.0.0.1:3476)
  --token <key>                       a key or token, sent as Authorization: Bearer
  --tenant <id>                       the tenant (default t1)
  --depth <n>                         metadata.depth (default 20)
  --snap-token <token>, --schema-version <version>
                                      as in a check request (default: the newest)
  --context <file.json>               contextual tuples, attributes and data (a check request's context)
  --json                              print the JSON answer instead of the tree

decisions options:
  --tenant <id>, --subject <type:id[#relation]>, --entity <type:id>, --permission <name>, --api <api>
                                      records of this tenant, subject (a hashed subject id matches too),
                                      entity, permission, API (check, bulk_check, explain, lookup_entity,
                                      lookup_subject, subject_permission)
  --decision allowed|denied|lookup    records with this decision
  --since <time>, --until <time>      RFC 3339, or a time ago: 15m, 2h, 1d
  --trace-id <id>                     the records of one trace
  --limit <n>                         print at most n records
  --explain                           re-run each check (with --url and --token, as for explain)
export options:
  --snap-token <token>                the snap to export (default: the head)
  --token <key>                       with --url: a key or token, sent as Authorization: Bearer

import options:
  --on-conflict touch|skip|fail       a row that exists with another value or expiry: replaced (touch, the
                                      default), kept (skip), or a line error (fail); identical rows are kept
  --dry-run                           check every record against the schema and the tenant; write nothing
  --errors <file>                     one JSON line per line error ({line, code, message})
  --max-errors <n>                    line errors allowed before the import stops (default 0)
  --checkpoint <file>                 where the import notes its progress (default <file>.checkpoint); a
                                      re-run with it (after kill -9, say) resumes after the last chunk
  --chunk-rows <n>                    rows per write (default 20000)
  --request-bytes <n>                 with --url: bytes of dump lines per request (default 1000000)
  --from permify-validation|openfga|zed-backup|permify
                                      a Permify validation file, a running Permify server (the
                                      source is its URL, ?tenant=ID&snap_token=TOKEN), OpenFGA
                                      tuples (fga store export YAML, CSV, JSON or JSONL) or a SpiceDB
                                      zed backup file, the last two with --schema <file.perm> and
                                      any number of --rewrite type:old=new / relation:[type#]old=new;
                                      whatever Pemba cannot represent stops the import before
                                      anything is written

load options:
  --url <url>                         the server (default http://127.0.0.1:3476)
  --tenant <id>                       the tenant written to (default t1)
  --token <key>                       a key or token, sent as Authorization: Bearer
  --batch <n>                         relationships and attributes per data/write (default 500)

migrate options:
  --database <path|url>               as for serve (env PEMBA_DATABASE)

Examples:
  pemba serve
  pemba serve --database postgres://pemba@localhost/pemba --host 0.0.0.0 --auth-keys secret1,ci:t1|t2
  pemba validate ./authz.yaml
  pemba codegen schema.perm -o src/authz.ts
  pemba schema diff main.perm branch.perm --database ./pemba.db
  pemba explain document:1 view user:alice --token secret1
  pemba load examples/authzen/todo/scenario.yaml --tenant todo --token secret1
  pemba export --database ./pemba.db --tenant acme -o acme.ndjson.gz
  pemba import --database postgres://pemba@localhost/pemba --tenant acme acme.ndjson.gz
  PEMBA_DATABASE=libsql://db.example.turso.io?authToken=... pemba migrate
`;

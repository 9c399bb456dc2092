import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatReport } from "./report.ts";
import { validateFile } from "./run.ts";
import { schemaFiles } from "./schema-files.ts";
import { validationTestFile as file, lineOf } from "./testing.ts";

describe("validateFile: loading a file", () => {
  describe("relationships and attributes that violate the schema", () => {
    const bad = (relationships: string[], attributes?: string[]) =>
      file({
        relationships,
        attributes,
        scenarios: `
  - name: s
    checks:
      - entity: doc:1
        subject: user:1
        assertions: {edit: true}`,
      });

    it("abort the run with the error code and the offending tuple", async () => {
      const text = bad(["doc:1#owner@user:1", "doc:1#owner@org:1", "doc:1#nope@user:1"]);
      const report = await validateFile(text);
      expect(report.ok).toBe(false);
      expect(report.assertions).toEqual([]);
      expect(report.aborted).toEqual({
        stage: "relationships",
        code: "ERROR_CODE_SUBJECT_TYPE_NOT_FOUND",
        message: "ERROR_CODE_SUBJECT_TYPE_NOT_FOUND",
        key: "doc:1#owner@org:1",
        line: lineOf(text, "doc:1#owner@org:1"),
      });
      expect(formatReport(report)).toBe(
        [
          `Error: ERROR_CODE_SUBJECT_TYPE_NOT_FOUND: invalid relationship "doc:1#owner@org:1" (line ${lineOf(text, "doc:1#owner@org:1")})`,
          "FAILED: validation stopped at relationships",
        ].join("\n"),
      );
    });

    it("abort on an attribute of the wrong type", async () => {
      const report = await validateFile(bad(["doc:1#owner@user:1"], ["doc:1$public|integer:1"]));
      expect(report.aborted).toMatchObject({
        stage: "attributes",
        code: "ERROR_CODE_ATTRIBUTE_TYPE_MISMATCH",
        key: "doc:1$public|integer:1",
      });
    });

    it("are written as they are in unchecked mode", async () => {
      const report = await validateFile(bad(["doc:1#owner@user:1", "doc:1#nope@user:1"]), {
        unchecked: true,
      });
      expect(formatReport(report)).toBe("SUCCESS: 1 of 1 assertion passed");
    });

    it("a relationship that does not parse is recorded and skipped; the run goes on", async () => {
      const text = bad(["doc:1#owner@user:1", "garbage"]);
      const report = await validateFile(text);
      expect(report.ok).toBe(false);
      expect(report.passed).toBe(1);
      expect(report.problems).toMatchObject([
        { stage: "relationships", key: "garbage", line: lineOf(text, "garbage") },
      ]);
    });
  });

  describe("file format", () => {
    it("a context written as a list stops the run, naming the line", async () => {
      const text = file({
        scenarios: `
  - name: s
    checks:
      - entity: doc:1
        subject: user:1
        context:
          - "doc:1#owner@user:7"
        assertions: {edit: true}`,
      });
      const report = await validateFile(text);
      const line = lineOf(text, '- "doc:1#owner@user:7"');
      expect(report.aborted).toEqual({
        stage: "file",
        line,
        message: `invalid validation file:\n  line ${line}: scenarios[0].checks[0].context must be a mapping with \`tuples\`, \`attributes\` and \`data\` keys, not a list`,
      });
      expect(formatReport(report)).toContain(
        `line ${line}: scenarios[0].checks[0].context must be a mapping`,
      );
    });

    it("assertions written as a list stop the run, naming the line", async () => {
      const text = file({
        scenarios: `
  - name: s
    checks:
      - entity: doc:1
        subject: user:1
        assertions:
          - edit`,
      });
      const report = await validateFile(text);
      expect(report.aborted?.stage).toBe("file");
      expect(report.aborted?.line).toBe(lineOf(text, "- edit"));
      expect(report.aborted?.message).toContain(
        "scenarios[0].checks[0].assertions must be a mapping of permission -> true/false, not a list",
      );
    });

    it("a YAML syntax error stops the run, naming the line", async () => {
      const report = await validateFile("schema: |-\n  entity user {}\nscenarios:\n  - name: [oops\n");
      expect(report.aborted?.stage).toBe("file");
      expect(report.aborted?.line).toBeGreaterThanOrEqual(4);
    });
  });

  describe("schema", () => {
    let dir: string;
    beforeAll(() => {
      dir = mkdtempSync(path.join(tmpdir(), "pemba-validation-"));
      writeFileSync(
        path.join(dir, "schema.perm"),
        "entity user {}\nentity doc {\n  relation owner @user\n}\n",
      );
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    const scenario = `relationships:
  - doc:1#owner@user:1
scenarios:
  - name: s
    checks:
      - entity: doc:1
        subject: user:1
        assertions: {owner: true}`;

    it("a relative file path is read by the reader, from its folder", async () => {
      const report = await validateFile(`schema: schema.perm\n${scenario}`, {
        readSchemaFile: schemaFiles(dir),
      });
      expect(formatReport(report)).toBe("SUCCESS: 1 of 1 assertion passed");
    });

    it("without a file reader (Workers, browsers), a path-like value is the schema's DSL", async () => {
      const report = await validateFile(`schema: schema.perm\n${scenario}`);
      expect(formatReport(report)).toBe(
        "Error: invalid schema (file line 1): ERROR_CODE_SCHEMA_COMPILE: 1:1: no entity references found in schema\nFAILED: validation stopped at schema",
      );
    });

    it("an http(s) URL is fetched", async () => {
      const server = createServer((_req, res) =>
        res.end("entity user {}\nentity doc {\n  relation owner @user\n}\n"),
      );
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      try {
        const { port } = server.address() as AddressInfo;
        const report = await validateFile(`schema: http://127.0.0.1:${port}/schema.perm\n${scenario}`);
        expect(formatReport(report)).toBe("SUCCESS: 1 of 1 assertion passed");
      } finally {
        await new Promise((resolve) => server.close(resolve));
      }
    });

    it("a schema error stops the run, naming the file line when the schema is an inline | block", async () => {
      const parseError = await validateFile("relationships: []\nschema: |-\n  entity user {\n");
      expect(parseError.ok).toBe(false);
      expect(parseError.aborted).toMatchObject({ stage: "schema", code: "ERROR_CODE_SCHEMA_PARSE" });
      expect(parseError.aborted?.line).toBeGreaterThanOrEqual(3);

      const compileError = await validateFile(
        "relationships: []\nschema: |-\n  entity user {}\n  entity doc {\n    relation owner @nope\n  }\n",
      );
      expect(compileError.aborted).toMatchObject({
        stage: "schema",
        code: "ERROR_CODE_SCHEMA_COMPILE",
        line: 5,
      });
      expect(formatReport(compileError)).toMatch(
        /^Error: invalid schema \(file line 5\): ERROR_CODE_SCHEMA_COMPILE: 3:\d+: /,
      );

      // a quoted schema string cannot be mapped line by line: the `schema` key's line is given
      const quoted = await validateFile(
        'relationships: []\nschema: "entity user {}\\nentity doc {\\n  relation owner @nope\\n}"\n',
      );
      expect(quoted.aborted).toMatchObject({ stage: "schema", code: "ERROR_CODE_SCHEMA_COMPILE", line: 2 });
    });
  });
});

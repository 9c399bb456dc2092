/**
 * The parser of the Permify schema language: a chevrotain grammar over the lexer's non-ignored tokens that
 * reproduces Permify's Pratt parser (pkg/dsl/parser) — one NEWLINE allowed after `= ( and or not`, every
 * operator at the same precedence (left-associative), junk tokens skipped between statements, rule bodies rebuilt
 * from raw token literals up to the first `}`. Recognition errors become Permify's messages and positions
 * (parser-errors.ts). Duplicate names are detected here, as in Permify.
 */
import { EmbeddedActionsParser, type IToken } from "chevrotain";
import { checkDepth, ExpressionFrames } from "./expression-frames.ts";
import { type LexedInput, lex, type Token, tokenPosition } from "./lexer.ts";
import { ERROR_MESSAGES, errorAfter, toPermifyError } from "./parser-errors.ts";
import { ALL_TOKEN_TYPES, Category, parserInput, type SchemaToken, T } from "./parser-tokens.ts";
import type {
  NamePart,
  RawAttribute,
  RawEntity,
  RawExpr,
  RawMember,
  RawPermission,
  RawRelation,
  RawRule,
  RawSchema,
} from "./raw-ast.ts";
import { SchemaParseError } from "./schema-error.ts";

export { MAX_EXPRESSION_DEPTH } from "./expression-frames.ts";

/** Tokens after which Permify skips one NEWLINE before an expression operand. */
const CONTINUATIONS = new Set(["LP", "AND", "OR", "NOT", "ASSIGN"]);

const source = (t: IToken): Token => (t as SchemaToken).source;
const part = (t: IToken): NamePart => ({ name: source(t).literal, pos: tokenPosition(source(t)) });

class SchemaParser extends EmbeddedActionsParser {
  #raw: Token[] = [];
  /** Entity/rule names and `entity#member` keys, as Permify's References. */
  #references = new Set<string>();

  constructor() {
    super(ALL_TOKEN_TYPES, { recoveryEnabled: false, maxLookahead: 2, errorMessageProvider: ERROR_MESSAGES });
    this.performSelfAnalysis();
  }

  load(input: LexedInput, tokens: SchemaToken[]): void {
    this.#raw = input.tokens;
    this.#references = new Set();
    this.input = tokens;
  }

  /** Permify reports a duplicate right after reading the token that follows the name's statement part. */
  #addReference(key: string): void {
    if (this.#references.has(key)) throw errorAfter(source(this.LA(1)), `duplication found for ${key}`);
    this.#references.add(key);
  }

  schema = this.RULE("schema", (): RawSchema => {
    const statements: (RawEntity | RawRule)[] = [];
    this.MANY(() => {
      this.OR([
        {
          ALT: () => {
            const entity = this.SUBRULE(this.entity);
            this.ACTION(() => statements.push(entity));
          },
        },
        {
          ALT: () => {
            const rule = this.SUBRULE(this.rule);
            this.ACTION(() => statements.push(rule));
          },
        },
        { ALT: () => this.CONSUME(Category.TopLevelJunk) },
      ]);
    });
    return { statements };
  });

  /** Permify's ParsePartial: the first relation/attribute/permission statement, in `entity`'s context. */
  partial = this.RULE("partial", (entity: string): RawMember | undefined => {
    let found: RawMember | undefined;
    this.MANY({
      GATE: () => found === undefined,
      DEF: () => {
        this.OR([
          {
            ALT: () => {
              found = this.SUBRULE(this.member, { ARGS: [entity] });
            },
          },
          { ALT: () => this.CONSUME(Category.MemberJunk) },
        ]);
      },
    });
    return found;
  });

  entity = this.RULE("entity", (): RawEntity => {
    this.CONSUME(T.ENTITY);
    const nameToken = this.CONSUME(T.IDENT);
    const name = this.ACTION(() => source(nameToken).literal);
    this.ACTION(() => this.#addReference(name));
    this.CONSUME(T.LCB);
    const members: RawMember[] = [];
    this.MANY(() => {
      this.OR([
        {
          ALT: () => {
            const member = this.SUBRULE(this.member, { ARGS: [name] });
            this.ACTION(() => members.push(member));
          },
        },
        { ALT: () => this.CONSUME(T.NEWLINE) },
        // A stray `{` is skipped (Permify's quirk).
        { ALT: () => this.CONSUME2(T.LCB) },
      ]);
    });
    this.CONSUME(T.RCB);
    return this.ACTION(() => ({ kind: "entity", name, pos: tokenPosition(source(nameToken)), members }));
  });

  member = this.RULE("member", (entity: string): RawMember => {
    return this.OR([
      { ALT: () => this.SUBRULE(this.relation, { ARGS: [entity] }) },
      { ALT: () => this.SUBRULE(this.attribute, { ARGS: [entity] }) },
      { ALT: () => this.SUBRULE(this.permission, { ARGS: [entity] }) },
    ]);
  });

  relation = this.RULE("relation", (entity: string): RawRelation => {
    this.CONSUME(T.RELATION);
    const nameToken = this.CONSUME(T.IDENT);
    const types: RawRelation["types"] = [];
    this.AT_LEAST_ONE(() => {
      this.CONSUME(T.SIGN);
      const typeToken = this.CONSUME2(T.IDENT);
      let relation = "";
      this.OPTION(() => {
        this.CONSUME(T.HASH);
        const relationToken = this.CONSUME3(T.IDENT);
        this.ACTION(() => (relation = source(relationToken).literal));
      });
      this.ACTION(() =>
        types.push({ type: source(typeToken).literal, relation, pos: tokenPosition(source(typeToken)) }),
      );
    });
    return this.ACTION(() => {
      const name = source(nameToken).literal;
      this.#addReference(`${entity}#${name}`);
      return { kind: "relation", name, pos: tokenPosition(source(nameToken)), types };
    });
  });

  attribute = this.RULE("attribute", (entity: string): RawAttribute => {
    this.CONSUME(T.ATTRIBUTE);
    const nameToken = this.CONSUME(T.IDENT);
    const typeToken = this.CONSUME2(T.IDENT);
    const isArray = this.SUBRULE(this.arraySuffix);
    return this.ACTION(() => {
      const name = source(nameToken).literal;
      this.#addReference(`${entity}#${name}`);
      return {
        kind: "attribute",
        name,
        pos: tokenPosition(source(nameToken)),
        typeName: source(typeToken).literal,
        isArray,
        typePos: tokenPosition(source(typeToken)),
      };
    });
  });

  arraySuffix = this.RULE("arraySuffix", (): boolean => {
    let isArray = false;
    this.OPTION(() => {
      this.CONSUME(T.LSB);
      this.CONSUME(T.RSB);
      isArray = true;
    });
    return isArray;
  });

  permission = this.RULE("permission", (entity: string): RawPermission => {
    this.CONSUME(T.PERMISSION);
    const nameToken = this.CONSUME(T.IDENT);
    const name = this.ACTION(() => source(nameToken).literal);
    this.ACTION(() => this.#addReference(`${entity}#${name}`));
    this.CONSUME(T.ASSIGN);
    const expr = this.SUBRULE(this.expression);
    return this.ACTION(() => ({ kind: "permission", name, pos: tokenPosition(source(nameToken)), expr }));
  });

  /**
   * Permify's expression: a prefix, then `and`/`or`/`not` operands at one precedence, left-associative. Groups
   * `( ... )` are frames of an explicit stack rather than recursive rule calls, so nesting costs no call stack.
   */
  expression = this.RULE("expression", (): RawExpr => {
    const frames = new ExpressionFrames();
    this.SUBRULE(this.operand, { ARGS: [frames, 0] });
    this.MANY({
      GATE: () => this.#continuesExpression(frames),
      DEF: () => {
        this.OR([
          {
            ALT: () => {
              const opToken = this.CONSUME(Category.Operator);
              const depth = this.ACTION(() => frames.operator(opToken));
              this.SUBRULE2(this.operand, { ARGS: [frames, depth] });
            },
          },
          {
            ALT: () => {
              this.CONSUME(T.RP);
              this.ACTION(() => frames.close());
            },
          },
        ]);
      },
    });
    return this.ACTION(() => {
      const next = this.LA(1);
      if (frames.nested) {
        throw errorAfter(
          source(next),
          `expected next token to be RP, got ${source(next).kind} instead`,
          source(next),
        );
      }
      return frames.result;
    });
  });

  #continuesExpression(frames: ExpressionFrames): boolean {
    const kind = source(this.LA(1)).kind;
    return kind === "AND" || kind === "OR" || kind === "NOT" || (kind === "RP" && frames.nested);
  }

  /** Permify's parseExpression entry at `depth`: groups opened by `(`, then a primary. */
  operand = this.RULE("operand", (frames: ExpressionFrames, depth: number): void => {
    this.ACTION(() => checkDepth(depth, this.LA(2)));
    this.OPTION({ GATE: () => this.#continuation(), DEF: () => this.CONSUME(T.NEWLINE) });
    this.MANY(() => {
      this.CONSUME(T.LP);
      this.ACTION(() => {
        depth++;
        frames.open(depth);
        checkDepth(depth, this.LA(2));
      });
      this.OPTION2({ GATE: () => this.#continuation(), DEF: () => this.CONSUME2(T.NEWLINE) });
    });
    // A single alternative: anything else is Permify's "no prefix parse function".
    const primary = this.OR2([{ ALT: () => this.SUBRULE(this.identifierOrCall) }]);
    this.ACTION(() => frames.value(primary));
  });

  /** One NEWLINE may follow `= ( and or not` before an operand. */
  #continuation(): boolean {
    const previous = (this.LA(0) as Partial<SchemaToken>).source;
    return previous !== undefined && CONTINUATIONS.has(previous.kind);
  }

  /** `name(args)` when `(` follows the name, else a dotted identifier. */
  identifierOrCall = this.RULE("identifierOrCall", (): RawExpr => {
    const nameToken = this.CONSUME(T.IDENT);
    let args: NamePart[][] | undefined;
    const parts: NamePart[] = [];
    this.OPTION(() => {
      args = this.SUBRULE(this.callArguments);
    });
    this.MANY({
      GATE: () => args === undefined,
      DEF: () => {
        this.CONSUME(T.DOT);
        const t = this.CONSUME2(T.IDENT);
        this.ACTION(() => parts.push(part(t)));
      },
    });
    return this.ACTION((): RawExpr => {
      const first = part(nameToken);
      if (args !== undefined) return { kind: "call", name: first.name, pos: first.pos, args };
      return { kind: "identifier", parts: [first, ...parts] };
    });
  });

  callArguments = this.RULE("callArguments", (): NamePart[][] => {
    const args: NamePart[][] = [];
    this.CONSUME(T.LP);
    this.OR([
      { ALT: () => this.CONSUME(T.RP) },
      {
        ALT: () => {
          const arg = this.SUBRULE(this.argument);
          this.ACTION(() => args.push(arg));
          this.MANY(() => {
            this.CONSUME(T.COMMA);
            const arg = this.SUBRULE2(this.argument);
            this.ACTION(() => args.push(arg));
          });
          this.CONSUME2(T.RP);
        },
      },
    ]);
    return args;
  });

  argument = this.RULE("argument", (): NamePart[] => {
    const parts: NamePart[] = [];
    const first = this.CONSUME(T.IDENT);
    this.ACTION(() => parts.push(part(first)));
    this.MANY(() => {
      this.CONSUME(T.DOT);
      const t = this.CONSUME2(T.IDENT);
      this.ACTION(() => parts.push(part(t)));
    });
    return parts;
  });

  rule = this.RULE("rule", (): RawRule => {
    this.CONSUME(T.RULE);
    const nameToken = this.CONSUME(T.IDENT);
    const params = this.SUBRULE(this.ruleParameters);
    this.CONSUME(T.LCB);
    // Permify's body: the first token, the next non-ignored one, then the raw token stream up to `}`.
    const first = this.CONSUME(Category.Any);
    let second: IToken | undefined;
    this.MANY(() => {
      const t = this.CONSUME(Category.Body);
      this.ACTION(() => {
        second ??= t;
      });
    });
    const close = this.CONSUME(T.RCB);
    return this.ACTION(() => {
      const name = source(nameToken).literal;
      this.#addReference(name);
      const body = this.#ruleBody(first, second, close);
      return { kind: "rule", name, pos: tokenPosition(source(nameToken)), params, body };
    });
  });

  /** Permify's body text: the token right before `}` is never included (nor ignored tokens after the first). */
  #ruleBody(first: IToken, second: IToken | undefined, close: IToken): string {
    if (second === undefined) return "";
    const pieces = [source(first).literal, source(second).literal];
    const end = (close as SchemaToken).rawIndex;
    for (let i = (second as SchemaToken).rawIndex + 1; i < end; i++) pieces.push(this.#raw[i].literal);
    pieces.pop();
    return pieces.join("");
  }

  /** `(name type, name type[], ...)`, a trailing comma allowed. */
  ruleParameters = this.RULE("ruleParameters", (): RawRule["params"] => {
    const params: RawRule["params"] = [];
    this.CONSUME(T.LP);
    this.OPTION(() => {
      const param = this.SUBRULE(this.ruleParameter);
      this.ACTION(() => params.push(param));
      this.MANY(() => {
        this.CONSUME(T.COMMA);
        const param = this.SUBRULE2(this.ruleParameter);
        this.ACTION(() => params.push(param));
      });
      this.OPTION2(() => this.CONSUME2(T.COMMA));
    });
    this.CONSUME(T.RP);
    return params;
  });

  ruleParameter = this.RULE("ruleParameter", (): RawRule["params"][number] => {
    const nameToken = this.CONSUME(T.IDENT);
    const typeToken = this.CONSUME2(T.IDENT);
    const isArray = this.SUBRULE(this.arraySuffix);
    return this.ACTION(() => ({
      name: source(nameToken).literal,
      typeName: source(typeToken).literal,
      isArray,
      typePos: tokenPosition(source(typeToken)),
    }));
  });
}

/** Built once: chevrotain's grammar analysis runs at module load. */
const parser = new SchemaParser();

/** A schema's tokens, ready for the parser: the lexer's output and the parser's input built from it. */
export interface LexedSchema {
  input: LexedInput;
  tokens: SchemaToken[];
}

/** Lexes `text` and builds the parser's input (everything before the parse itself). */
export function lexSchema(text: string): LexedSchema {
  const input = lex(text);
  return { input, tokens: parserInput(input) };
}

function run<R>({ input, tokens }: LexedSchema, parse: () => R): R {
  parser.load(input, tokens);
  const result = parse();
  // The virtual EOFs are never all consumed: chevrotain's "not all input parsed" is no error here.
  const error = parser.errors.find((e) => e.name !== "NotAllInputParsedException");
  if (error !== undefined) throw toPermifyError(error, tokens);
  return result;
}

/** Lexes and parses a whole schema (no reference checks yet). Throws SchemaParseError. */
export function parseRawSchema(text: string): RawSchema {
  return parseLexedSchema(lexSchema(text));
}

/**
 * Parses a whole schema lexed earlier with `lexSchema` (a schema write lexes and parses in separate event-loop
 * turns). Throws SchemaParseError.
 */
export function parseLexedSchema(lexed: LexedSchema): RawSchema {
  return run(lexed, () => parser.schema());
}

/** Parses one partial-write statement in the context of `entity` (Permify's ParsePartial). */
export function parseRawMember(text: string, entity: string): RawMember {
  const member = run(lexSchema(text), () => parser.partial(entity));
  if (member === undefined) throw new SchemaParseError("no valid statement found", { line: 1, column: 1 });
  return member;
}

export * from "./ast.ts";
export { attributeTypeOf } from "./check.ts";
export {
  type AffectedPermission,
  type AttributeTypeChange,
  diffSchemas,
  type RemovedKind,
  type SchemaAddition,
  type SchemaRemoval,
  type StructuralDiff,
} from "./diff.ts";
export type { Token, TokenKind } from "./lexer.ts";
export { lex } from "./lexer.ts";
export {
  attributeTypeWord,
  formatAttribute,
  formatTuple,
  parseAttributeString,
  parseAttributeValue,
  parseEntityString,
  parseSubjectString,
  parseTupleString,
} from "./notation.ts";
export { parseSchema, type SchemaParseResult, tryParseSchema } from "./parse-schema.ts";
export { MAX_EXPRESSION_DEPTH } from "./parser.ts";
export { applyPartialWrite, type EntityPartials } from "./partial.ts";
export { attributeTypeText, printExpression, printSchema } from "./print.ts";
export { SchemaError, SchemaParseError, type TokenSpan } from "./schema-error.ts";
export { validateAttribute, validateTuple } from "./validate-data.ts";
export {
  childToWire,
  entityToWire,
  schemaToWire,
  type WireChild,
  type WireSchemaDefinition,
} from "./wire.ts";

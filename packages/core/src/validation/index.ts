/** The validation-file runner: Permify's YAML "shape" files replayed against Pemba's engine. */

export type { LoadedShape, ValidateOptions } from "./load.ts";
export { errorText, loadShape, VALIDATION_TENANT, ValidationAbort } from "./load.ts";
export type { AssertionOutcome, QueryKind, RunAbort, RunProblem, ValidationReport } from "./report.ts";
export { describeFailure, formatReport } from "./report.ts";
export {
  DEFAULT_DEPTH,
  entityText,
  parseSubjectReference,
  resolveDepth,
  runScenarios,
  subjectText,
  validateFile,
} from "./run.ts";
export { loadSchemaText } from "./schema-source.ts";
export type {
  LocatedString,
  Shape,
  ShapeCheck,
  ShapeContext,
  ShapeEntityFilter,
  ShapeScenario,
  ShapeSubjectFilter,
} from "./shape.ts";
export { decodeShape, ShapeFormatError } from "./shape.ts";
export {
  parseRelationship,
  type UploadOptions,
  type UploadProgress,
  type UploadResult,
  type UploadTarget,
  uploadValidationFile,
  validationFileData,
} from "./upload.ts";

export { type CompiledRule, compileRule, type RuleArgument, ruleArgument, zeroArgument } from "./cel-rule.ts";

/** The Policy Decision Point metadata (`/.well-known/authzen-configuration`) of a decision point's base URL. */
import type { z } from "@hono/zod-openapi";
import type { AuthzenConfigurationSchema } from "./wire.ts";

export type AuthzenConfiguration = z.output<typeof AuthzenConfigurationSchema>;

/** The metadata of the decision point at `base` (`https://pdp.example.com` or `.../v1/tenants/t1`). */
export function authzenConfiguration(base: string): AuthzenConfiguration {
  return {
    policy_decision_point: base,
    access_evaluation_endpoint: `${base}/access/v1/evaluation`,
    access_evaluations_endpoint: `${base}/access/v1/evaluations`,
    search_subject_endpoint: `${base}/access/v1/search/subject`,
    search_resource_endpoint: `${base}/access/v1/search/resource`,
    search_action_endpoint: `${base}/access/v1/search/action`,
  };
}

/**
 * JSON schemas of the routes: fastify validates requests with them (no type
 * coercion in bodies, unknown fields rejected) and @fastify/swagger turns them
 * into /openapi.json. Bounds follow coord's limits; the node checks them again.
 */

import { MAX_NAMESPACE_LENGTH, NAMESPACE_NAME_PATTERN } from '@parley/interface';

export { MAX_NAMESPACE_LENGTH };
export const MAX_KEY_LENGTH = 1024;
export const MAX_ID_LENGTH = 256;
export const MAX_TTL_SECONDS = 30 * 86_400;
export const MAX_LOCK_TTL_SECONDS = 3600;
export const MAX_WAIT_SECONDS = 3600;
export const MAX_QUERY_TEXT = 1024;
export const MAX_CURSOR_LENGTH = 2048;

export const namespaceSchema = {
  type: 'string',
  minLength: 1,
  maxLength: MAX_NAMESPACE_LENGTH,
  pattern: NAMESPACE_NAME_PATTERN,
  description: 'Letters, digits, ".", "_" and "-", starting alphanumeric.',
} as const;

export const keySchema = {
  type: 'string',
  minLength: 1,
  maxLength: MAX_KEY_LENGTH,
  pattern: '^[^\\u0000-\\u001f\\u007f]+$',
  description: 'Any text without control characters; encode "/" as %2F.',
} as const;

const idSchema = {
  type: 'string',
  minLength: 1,
  maxLength: MAX_ID_LENGTH,
  pattern: '^[^\\u0000-\\u001f\\u007f]+$',
} as const;

export const ttlSchema = {
  type: 'integer',
  minimum: 1,
  maximum: MAX_TTL_SECONDS,
  description: 'Seconds; default 3600, at most 30 days.',
} as const;

const lockTtlSchema = { type: 'integer', minimum: 1, maximum: MAX_LOCK_TTL_SECONDS } as const;
const positiveSafeInteger = { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER } as const;
const fenceNumber = positiveSafeInteger;
const epochNumber = positiveSafeInteger;
const consistencySchema = { type: 'string', enum: ['local', 'majority'] } as const;
const versionSchema = { type: 'string', minLength: 1, maxLength: 256 } as const;
/** Any JSON value (a value, a lease state, lock metadata). */
const anyJson = { description: 'Any JSON value.' } as const;

/** Query integers arrive as text: digits only, parsed by the route. */
const digits = (maxDigits: number) => ({ type: 'string', pattern: `^[0-9]{1,${maxDigits}}$` }) as const;
const bool = { type: 'string', enum: ['true', 'false'] } as const;

export const nsParams = {
  type: 'object',
  additionalProperties: false,
  required: ['ns'],
  properties: { ns: namespaceSchema },
} as const;

export const nsKeyParams = {
  type: 'object',
  additionalProperties: false,
  required: ['ns', 'key'],
  properties: { ns: namespaceSchema, key: keySchema },
} as const;

export const fenceSchema = {
  description: 'A lock fence: a number (the lock on the same namespace/key) or the lock it names.',
  oneOf: [
    fenceNumber,
    {
      type: 'object',
      additionalProperties: false,
      required: ['namespace', 'key', 'fence'],
      properties: { namespace: namespaceSchema, key: keySchema, fence: fenceNumber },
    },
  ],
} as const;

export const stateSetBody = {
  type: 'object',
  additionalProperties: false,
  required: ['value'],
  properties: {
    value: anyJson,
    ttl_seconds: ttlSchema,
    if_not_exists: { type: 'boolean' },
    if_version_matches: versionSchema,
    fence: fenceSchema,
  },
} as const;

export const stateDeleteQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    if_version_matches: versionSchema,
    fence: digits(16),
    fence_namespace: namespaceSchema,
    fence_key: keySchema,
  },
} as const;

export const listQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    q: { type: 'string', maxLength: MAX_QUERY_TEXT },
    filter: { type: 'string', maxLength: MAX_QUERY_TEXT },
    sort_by: { type: 'string', enum: ['key', 'created_at', 'updated_at'] },
    sort_order: { type: 'string', enum: ['asc', 'desc'] },
    limit: digits(4),
    cursor: { type: 'string', minLength: 1, maxLength: MAX_CURSOR_LENGTH },
    watch: bool,
    prefix: { type: 'string', maxLength: MAX_KEY_LENGTH },
    from_revision: digits(16),
  },
} as const;

/** How fresh a strong read must be (docs/guarantees.md, "Strong reads"); bounds imply `bounded`. */
const strongReadProperties = {
  consistency: { type: 'string', enum: ['linearizable', 'serializable', 'bounded'] },
  max_staleness_ms: digits(8),
  max_lag_entries: digits(10),
} as const;

export const strongReadQuery = {
  type: 'object',
  additionalProperties: false,
  properties: strongReadProperties,
} as const;

export const strongListQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { ...listQuery.properties, ...strongReadProperties },
} as const;

export const deleteNamespaceQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    confirm: bool,
    pattern: { type: 'string', minLength: 1, maxLength: MAX_KEY_LENGTH },
  },
} as const;

export const lockAcquireBody = {
  type: 'object',
  additionalProperties: false,
  required: ['owner'],
  properties: {
    owner: idSchema,
    ttl_seconds: { ...lockTtlSchema, description: 'Seconds; default 60, at most 3600.' },
    wait_seconds: { type: 'integer', minimum: 0, maximum: MAX_WAIT_SECONDS },
    metadata: { ...anyJson, description: 'Any JSON, at most 16 KB encoded.' },
  },
} as const;

export const lockRenewBody = {
  type: 'object',
  additionalProperties: false,
  required: ['owner', 'fence'],
  properties: { owner: idSchema, fence: fenceNumber, ttl_seconds: lockTtlSchema },
} as const;

export const lockReleaseBody = {
  type: 'object',
  additionalProperties: false,
  required: ['owner', 'fence'],
  properties: { owner: idSchema, fence: fenceNumber },
} as const;

export const claimBody = {
  type: 'object',
  additionalProperties: false,
  required: ['value'],
  properties: { value: anyJson, ttl_seconds: ttlSchema },
} as const;

export const leaseAcquireBody = {
  type: 'object',
  additionalProperties: false,
  required: ['holder', 'ttl_seconds'],
  properties: { holder: idSchema, ttl_seconds: ttlSchema, state: anyJson },
} as const;

export const leaseRenewBody = {
  type: 'object',
  additionalProperties: false,
  required: ['holder', 'epoch'],
  properties: { holder: idSchema, epoch: epochNumber, ttl_seconds: ttlSchema },
} as const;

export const leaseWriteBody = {
  type: 'object',
  additionalProperties: false,
  required: ['holder', 'epoch', 'state'],
  properties: { holder: idSchema, epoch: epochNumber, state: anyJson, if_version_matches: versionSchema },
} as const;

export const leaseReleaseBody = {
  type: 'object',
  additionalProperties: false,
  required: ['holder', 'epoch'],
  properties: { holder: idSchema, epoch: epochNumber, state: anyJson },
} as const;

/** For consistency=majority: the namespace's replica count, this node included (see EventualWriteOptions.replicas). */
const replicasSchema = { type: 'integer', minimum: 1, maximum: 1024 } as const;

export const replicatedSetBody = {
  type: 'object',
  additionalProperties: false,
  required: ['value'],
  properties: {
    value: anyJson,
    ttl_seconds: ttlSchema,
    consistency: consistencySchema,
    replicas: replicasSchema,
  },
} as const;

export const replicatedIncrementBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    by: { type: 'integer', minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER },
    ttl_seconds: ttlSchema,
    consistency: consistencySchema,
    replicas: replicasSchema,
  },
} as const;

export const replicatedReadQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { consistency: consistencySchema, replicas: digits(4) },
} as const;

// ------------------------------------------------------------------ responses (documentation)

const time = { type: 'string', format: 'date-time', description: 'ISO 8601 UTC, microseconds.' } as const;

export const entrySchema = {
  type: 'object',
  properties: {
    namespace: { type: 'string' },
    key: { type: 'string' },
    value: anyJson,
    ttl_seconds: { type: 'integer' },
    version: { type: 'string' },
    created_at: time,
    updated_at: time,
    expires_at: time,
    operation: { type: 'string', enum: ['created', 'updated'] },
  },
} as const;

export const lockGrantSchema = {
  type: 'object',
  properties: {
    namespace: { type: 'string' },
    key: { type: 'string' },
    owner: { type: 'string' },
    fence: { type: 'integer' },
    ttl_seconds: { type: 'integer' },
    acquired_at: time,
    expires_at: time,
    metadata: anyJson,
  },
} as const;

export const leaseSchema = {
  type: 'object',
  properties: {
    namespace: { type: 'string' },
    key: { type: 'string' },
    epoch: { type: 'integer' },
    holder: { type: 'string', nullable: true },
    deadline_at: time,
    state: anyJson,
    version: { type: 'string' },
    ttl_seconds: { type: 'integer' },
  },
} as const;

/** The success envelope around `data`. */
export function okEnvelope(data: object, description: string) {
  return {
    description,
    type: 'object',
    properties: { status: { type: 'integer' }, msg: { type: 'string' }, data },
  } as const;
}

export const errorEnvelope = {
  description: 'Failure: `error` is a stable code (see docs/http-api.md).',
  type: 'object',
  properties: { status: { type: 'integer' }, msg: { type: 'string' }, error: { type: 'string' } },
} as const;

/** Error responses every API route may give. */
export const commonErrors = {
  400: errorEnvelope,
  401: errorEnvelope,
  404: errorEnvelope,
  409: errorEnvelope,
  413: errorEnvelope,
  503: errorEnvelope,
  504: errorEnvelope,
} as const;

/** The 200 response of the entry listings (state and replicated). */
export function entryPageResponse() {
  return okEnvelope(
    {
      type: 'object',
      properties: {
        namespace: { type: 'string' },
        items: { type: 'array', items: entrySchema },
        next_cursor: { type: 'string', nullable: true },
      },
    },
    'A page of entries (or a text/event-stream with watch=true)',
  );
}

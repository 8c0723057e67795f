/**
 * JSON schemas of the queue routes (/api/v1/queues/{ns}/{queue}/…): request
 * bounds follow the node's queue limits (docs/queue.md), which it checks again.
 */
import { MAX_ID_LENGTH, MAX_TTL_SECONDS, namespaceSchema } from './schemas.js';

const anyJson = { description: 'Any JSON value.' } as const;
const idText = {
  type: 'string',
  minLength: 1,
  maxLength: MAX_ID_LENGTH,
  pattern: '^[^\\u0000-\\u001f\\u007f]+$',
} as const;
const ttl = { type: 'integer', minimum: 1, maximum: MAX_TTL_SECONDS, description: 'Seconds.' } as const;
const fence = { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER } as const;
const maxAttempts = {
  type: 'integer',
  minimum: 1,
  maximum: 1000,
  description: 'Attempts before a task is dead-lettered (default 5).',
} as const;

export const queueParams = {
  type: 'object',
  additionalProperties: false,
  required: ['ns', 'queue'],
  properties: { ns: namespaceSchema, queue: namespaceSchema },
} as const;

export const taskParams = {
  type: 'object',
  additionalProperties: false,
  required: ['ns', 'queue', 'id'],
  properties: { ns: namespaceSchema, queue: namespaceSchema, id: { type: 'string', pattern: '^[0-9]{1,16}$' } },
} as const;

export const enqueueBody = {
  type: 'object',
  additionalProperties: false,
  required: ['item'],
  properties: {
    item: anyJson,
    key: { ...idText, description: 'De-duplicates: a second enqueue with this key returns the first task.' },
    key_ttl_seconds: { type: 'integer', minimum: 1, maximum: 86_400 },
    max_length: { type: 'integer', minimum: 1, maximum: 10_000 },
    max_item_bytes: { type: 'integer', minimum: 1, maximum: 1_048_576 },
  },
} as const;

export const takeBody = {
  type: 'object',
  additionalProperties: false,
  required: ['holder'],
  properties: { holder: idText, ttl_seconds: ttl, max_attempts: maxAttempts },
} as const;

export const heartbeatBody = {
  type: 'object',
  additionalProperties: false,
  required: ['holder', 'fence'],
  properties: { holder: idText, fence, ttl_seconds: ttl },
} as const;

export const completeBody = {
  type: 'object',
  additionalProperties: false,
  required: ['holder', 'fence'],
  properties: { holder: idText, fence, result: anyJson },
} as const;

export const failBody = {
  type: 'object',
  additionalProperties: false,
  required: ['holder', 'fence', 'reason'],
  properties: {
    holder: idText,
    fence,
    reason: anyJson,
    retry_after_seconds: { type: 'integer', minimum: 0, maximum: MAX_TTL_SECONDS },
    max_attempts: maxAttempts,
  },
} as const;

export const taskListQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    status: { type: 'string', enum: ['ready', 'taken', 'done', 'dead'] },
    limit: { type: 'string', pattern: '^[0-9]{1,4}$' },
    cursor: { type: 'string', minLength: 1, maxLength: 2048 },
  },
} as const;

const time = { type: 'string', format: 'date-time' } as const;

export const taskViewSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    status: { type: 'string', enum: ['ready', 'taken', 'done', 'dead'] },
    item: anyJson,
    attempts: { type: 'integer' },
    key: { type: 'string', nullable: true },
    holder: { type: 'string', nullable: true },
    fence: { type: 'integer' },
    deadline_at: time,
    result: anyJson,
    error: anyJson,
  },
} as const;

export const takenSchema = {
  type: 'object',
  properties: {
    task: {
      type: 'object',
      nullable: true,
      properties: {
        id: { type: 'string' },
        item: anyJson,
        attempt: { type: 'integer' },
        holder: { type: 'string' },
        fence: { type: 'integer' },
        deadline_at: time,
      },
    },
  },
} as const;

export const enqueuedSchema = {
  type: 'object',
  properties: { id: { type: 'string' }, created: { type: 'boolean' } },
} as const;

export const statsSchema = {
  type: 'object',
  properties: {
    namespace: { type: 'string' },
    queue: { type: 'string' },
    ready: { type: 'integer' },
    taken: { type: 'integer' },
    done: { type: 'integer' },
    dead: { type: 'integer' },
  },
} as const;

/** The success envelope of seed 000: `{status, msg, data}`. */
import type { FastifyReply } from 'fastify';

const MESSAGES: Record<number, string> = { 200: 'OK', 201: 'Created' };

export interface OkEnvelope<T> {
  status: number;
  msg: string;
  data: T;
}

export function envelope<T>(status: number, data: T): OkEnvelope<T> {
  return { status, msg: MESSAGES[status] ?? 'OK', data };
}

export function sendOk<T>(reply: FastifyReply, status: number, data: T): FastifyReply {
  return reply.code(status).send(envelope(status, data));
}

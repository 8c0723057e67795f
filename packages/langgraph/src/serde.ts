/**
 * LangGraph's serializer output as JSON: a `json` payload keeps its text, any
 * other type (`bytes`, a custom serializer's) is stored as base64.
 */
import type { SerializerProtocol } from '@langchain/langgraph-checkpoint';
import { StorageCorruptError } from '@parley/interface';

/** [type, 's' (UTF-8 text) | 'b' (base64), data] */
export type Serialized = [string, 's' | 'b', string];

const utf8 = new TextDecoder('utf-8', { fatal: true });

export async function encodeSerialized(serde: SerializerProtocol, value: unknown): Promise<Serialized> {
  const [type, bytes] = await serde.dumpsTyped(value);
  if (type === 'json') {
    try {
      return [type, 's', utf8.decode(bytes)];
    } catch {
      // not UTF-8 after all: keep the bytes
    }
  }
  return [type, 'b', Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64')];
}

export async function decodeSerialized(serde: SerializerProtocol, s: Serialized): Promise<unknown> {
  if (!Array.isArray(s) || s.length !== 3 || typeof s[0] !== 'string' || typeof s[2] !== 'string') {
    throw new StorageCorruptError('langgraph', 'a serialized value is malformed');
  }
  const [type, form, data] = s;
  return serde.loadsTyped(type, form === 's' ? data : new Uint8Array(Buffer.from(data, 'base64')));
}

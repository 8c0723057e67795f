import { ByteWriter } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { eventually, memoryCluster, settle } from '../testing/testkit.js';

describe('rich values', () => {
  it('Yjs documents edited offline on two nodes converge on reconnect, and persist', async () => {
    const c = memoryCluster();
    const a = await c.start('a');
    const b = await c.start('b');
    const ya = await a.eventual('docs').yjs('notes');
    const yb = await b.eventual('docs').yjs('notes');
    ya.getText('t').insert(0, 'hello');
    await eventually(() => yb.getText('t').toString() === 'hello');
    c.network.partition(['a'], ['b']);
    ya.getText('t').insert(5, ' world');
    yb.getText('t').insert(0, '>> ');
    yb.getMap('m').set('k', 1);
    await settle();
    expect(ya.getText('t').toString()).toBe('hello world');
    c.network.heal();
    await eventually(
      () => ya.getText('t').toString() === '>> hello world' && yb.getText('t').toString() === '>> hello world',
    );
    expect(ya.getMap('m').get('k')).toBe(1);
    await settle();
    await c.stop('a');
    const a2 = await c.start('a');
    const again = await a2.eventual('docs').yjs('notes');
    expect(again.getText('t').toString()).toBe('>> hello world');
    await Promise.all([a2.close(), b.close()]);
  });

  it('Automerge documents edited offline on two nodes converge on reconnect, and persist', async () => {
    const c = memoryCluster();
    const a = await c.start('a');
    const b = await c.start('b');
    const ha = await a.eventual('docs').automerge<{ items: string[]; n?: number; m?: number }>('list');
    const hb = await b.eventual('docs').automerge<{ items: string[]; n?: number; m?: number }>('list');
    await ha.change((d) => {
      d.items = ['x'];
    });
    await eventually(() => hb.doc().items?.length === 1);
    const seen: number[] = [];
    ha.onChange((d) => seen.push(d.items.length));
    c.network.partition(['a'], ['b']);
    await ha.change((d) => {
      d.items.push('from-a');
      d.n = 1;
    });
    await hb.change((d) => {
      d.items.push('from-b');
      d.m = 2;
    });
    c.network.heal();
    await eventually(() => ha.doc().items.length === 3 && hb.doc().items.length === 3);
    expect(ha.doc()).toEqual(hb.doc());
    expect(ha.doc()).toMatchObject({ n: 1, m: 2 });
    expect(seen.at(-1)).toBe(3);
    await c.stop('b');
    const b2 = await c.start('b');
    const again = await b2.eventual('docs').automerge<{ items: string[] }>('list');
    expect(again.doc().items).toHaveLength(3);
    await Promise.all([a.close(), b2.close()]);
  });

  it('a node that opens a document later pulls it from its peers', async () => {
    const c = memoryCluster();
    const a = await c.start('a');
    const b = await c.start('b');
    const ya = await a.eventual('late').yjs('d');
    ya.getArray<number>('xs').push([1, 2, 3]);
    const ha = await a.eventual('late').automerge<{ v?: number }>('am');
    await ha.change((d) => {
      d.v = 7;
    });
    await settle();
    const yb = await b.eventual('late').yjs('d');
    const hb = await b.eventual('late').automerge<{ v?: number }>('am');
    await eventually(() => yb.getArray('xs').length === 3 && hb.doc().v === 7);
    await Promise.all([a.close(), b.close()]);
  });
});

describe('rich values from hostile peers', () => {
  it('drops undecodable rich gossip and bad document updates with counted errors, and keeps syncing', async () => {
    const c = memoryCluster();
    const a = await c.start('a');
    const b = await c.start('b');
    const yb = await b.eventual('h').yjs('d');
    await a.eventual('h').yjs('d');
    const codes: string[] = [];
    b.context.events.on('reject:decode', (r) => codes.push(r.code));
    const topic = 'parley/evr/1/h';
    await a.context.transport.publish(topic, new Uint8Array([0, 1, 2]));
    // A well-framed gossip message (op 0, kind yjs, key 'd', one part) whose update is garbage.
    await a.context.transport.publish(topic, new Uint8Array([0, 1, 1, 100, 1, 3, 255, 255, 255]));
    await eventually(() => codes.length === 2);
    expect(codes).toEqual(['decode_error', 'decode_error']);
    const ya = await a.eventual('h').yjs('d');
    ya.getText('t').insert(0, 'still fine');
    await eventually(() => yb.getText('t').toString() === 'still fine');
    await Promise.all([a.close(), b.close()]);
  });

  it('refuses a gossiped Yjs update cut short in its delete set whole (Yjs alone would apply its first half)', async () => {
    const c = memoryCluster();
    const a = await c.start('a');
    const b = await c.start('b');
    const yb = await b.eventual('h').yjs('d');
    yb.getText('t').insert(0, 'before');
    const vector = Y.encodeStateVector(yb);
    const codes: string[] = [];
    b.context.events.on('reject:decode', (r) => codes.push(r.code));
    const source = new Y.Doc();
    source.getText('t').insert(0, 'hello world');
    source.getText('t').delete(0, 3);
    const update = Y.encodeStateAsUpdate(source);
    // A rich gossip message (op 0, kind yjs, key 'd') carrying the update without its last two bytes.
    const w = new ByteWriter();
    w.u8(0);
    w.u8(1);
    w.string('d');
    w.uint(1);
    w.bytes(update.slice(0, update.length - 2));
    await a.context.transport.publish('parley/evr/1/h', w.finish());
    await eventually(() => codes.length === 1);
    expect(codes).toEqual(['decode_error']);
    expect(yb.getText('t').toString()).toBe('before');
    expect(Y.encodeStateVector(yb)).toEqual(vector);
    await Promise.all([a.close(), b.close()]);
  });
});

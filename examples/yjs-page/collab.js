// The collaboration half of the page, DOM-free: a Y.Doc synced through a Parley node's
// y-websocket door with the stock WebsocketProvider, and presence (a name and a colour).
// main.js binds it to the page; the example's test runs it in Node against `parley serve`.
import { WebsocketProvider } from 'y-websocket';
import * as Y from 'yjs';

const COLORS = ['#e6194b', '#3cb44b', '#4363d8', '#f58231', '#911eb4', '#42d4f4'];

/**
 * Joins `room` ("{namespace}/{key}") on the node at `serverUrl` (ws://host:port/yjs).
 * `token`: the node's PARLEY_API_TOKEN, when it has one (sent as ?token=).
 * `WebSocket`: the WebSocket class (a browser's own by default; `ws` in Node).
 * `crossTab`: tabs of one browser also sync directly (BroadcastChannel); default true.
 * @param {{ serverUrl: string, room: string, name: string, token?: string, WebSocket?: typeof globalThis.WebSocket, crossTab?: boolean }} options
 */
export function joinRoom({ serverUrl, room, name, token, WebSocket = globalThis.WebSocket, crossTab = true }) {
  const doc = new Y.Doc();
  const provider = new WebsocketProvider(serverUrl, room, doc, {
    WebSocketPolyfill: WebSocket,
    params: token ? { token } : {},
    disableBc: !crossTab,
  });
  provider.awareness.setLocalStateField('user', { name, color: COLORS[doc.clientID % COLORS.length] });
  return {
    doc,
    provider,
    /** The shared text of the page. */
    text: doc.getText('body'),
    /** Everyone in the room, this client first: [{ name, color, self }]. */
    people() {
      const states = [...provider.awareness.getStates().entries()];
      return states
        .filter(([, s]) => s.user)
        .map(([id, s]) => ({ ...s.user, self: id === doc.clientID }))
        .sort((a, b) => Number(b.self) - Number(a.self));
    },
    leave() {
      provider.destroy();
      doc.destroy();
    },
  };
}

/** Replaces `text`'s content with `next` by its smallest middle edit, so concurrent edits elsewhere survive. */
export function applyEdit(text, next) {
  const prev = text.toString();
  let start = 0;
  while (start < prev.length && start < next.length && prev[start] === next[start]) start++;
  let end = 0;
  while (
    end < prev.length - start &&
    end < next.length - start &&
    prev[prev.length - 1 - end] === next[next.length - 1 - end]
  ) {
    end++;
  }
  text.doc.transact(() => {
    if (prev.length - start - end > 0) text.delete(start, prev.length - start - end);
    if (next.length - start - end > 0) text.insert(start, next.slice(start, next.length - end));
  });
}

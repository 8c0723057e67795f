// A page that is a Parley peer: its notes live in IndexedDB, are written even offline, and
// sync with the node named by ?node= (default http://127.0.0.1:4000) when it is reachable.
import { createBrowserNode } from '@parley/browser';

const params = new URLSearchParams(location.search);
const node = await createBrowserNode({
  url: params.get('node') ?? 'http://127.0.0.1:4000',
  token: params.get('token') ?? undefined,
});
const notes = node.eventual(params.get('ns') ?? 'notes');

const status = document.querySelector('#status');
const list = document.querySelector('#notes');
const form = document.querySelector('#add');
const key = document.querySelector('#key');
const text = document.querySelector('#text');

async function render() {
  const page = await notes.list({ limit: 1000 });
  list.replaceChildren(
    ...page.items.map((e) => {
      const li = document.createElement('li');
      li.textContent = `${e.key}: ${e.value}`;
      return li;
    }),
  );
}

status.textContent = notes.syncState;
notes.onSyncState((state) => {
  status.textContent = state;
});
// Local writes and those arriving from the node alike; 'expire' when a note's TTL runs out.
notes.watch({}, () => void render());
form.addEventListener('submit', async (event) => {
  event.preventDefault();
  await notes.set(key.value, text.value, { ttl: 7 * 86_400 });
  form.reset();
});
await render();

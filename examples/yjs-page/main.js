// The page: a textarea and the list of people in the room, bound to collab.js.
import { applyEdit, joinRoom } from './collab.js';

const params = new URLSearchParams(location.search);
const node = params.get('node') ?? 'ws://127.0.0.1:4000/yjs';
const room = params.get('room') ?? 'pages/welcome';
const name = params.get('name') ?? `guest-${Math.floor(Math.random() * 1000)}`;
const session = joinRoom({ serverUrl: node, room, name, token: params.get('token') ?? undefined });

const area = document.querySelector('#body');
const people = document.querySelector('#people');
const status = document.querySelector('#status');
document.querySelector('#room').textContent = `${room} on ${node}`;

area.addEventListener('input', () => applyEdit(session.text, area.value));
session.text.observe((_event, tr) => {
  if (tr.local) return;
  // Keep the caret where it was, shifted by what changed before it.
  const { selectionStart, selectionEnd, value } = area;
  const next = session.text.toString();
  const shift = next.length - value.length;
  const before = value.slice(0, selectionStart) === next.slice(0, selectionStart);
  area.value = next;
  area.setSelectionRange(
    before ? selectionStart : selectionStart + shift,
    before ? selectionEnd : selectionEnd + shift,
  );
});
session.provider.awareness.on('change', () => {
  people.replaceChildren(
    ...session.people().map((p) => {
      const li = document.createElement('li');
      li.textContent = p.self ? `${p.name} (you)` : p.name;
      li.style.color = p.color;
      return li;
    }),
  );
});
session.provider.on('status', ({ status: s }) => {
  status.textContent = s;
});
session.provider.on('closed', ({ code, reason }) => {
  status.textContent = `closed ${code}: ${reason}`;
});

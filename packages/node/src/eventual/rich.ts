/** Rich values (Yjs documents, Automerge documents) replicated with their own sync protocols. */
import * as Automerge from '@automerge/automerge';
import { type PeerId, UnavailableError } from '@parley/interface';
import * as Y from 'yjs';
import type { AutomergeHandle } from '../api.js';
import type { EventualNamespaceImpl } from './namespace.js';

export class RichValues {
  constructor(readonly ns: EventualNamespaceImpl) {}

  async yjs(_key: string): Promise<Y.Doc> {
    void Y;
    throw new UnavailableError('yjs values are not wired yet');
  }

  async automerge<T>(_key: string): Promise<AutomergeHandle<T>> {
    void Automerge;
    throw new UnavailableError('automerge values are not wired yet');
  }

  async handleRequest(_from: PeerId, _body: Uint8Array): Promise<Uint8Array> {
    throw new UnavailableError('rich values are not wired yet');
  }
}

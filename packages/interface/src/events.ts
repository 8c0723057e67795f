/**
 * Typed event maps: `Emitter<{ 'peer:connect': PeerId }>` only accepts
 * listeners of the right payload type.
 */
export type EventMap = Record<string, unknown>;

export type Unsubscribe = () => void;

export interface TypedEvents<M extends EventMap> {
  on<K extends keyof M>(type: K, listener: (payload: M[K]) => void): Unsubscribe;
}

/** A minimal synchronous emitter; a throwing listener does not stop the others. */
export class Emitter<M extends EventMap> implements TypedEvents<M> {
  private readonly listeners = new Map<keyof M, Set<(payload: never) => void>>();

  constructor(private readonly onListenerError: (err: unknown) => void = () => {}) {}

  on<K extends keyof M>(type: K, listener: (payload: M[K]) => void): Unsubscribe {
    let set = this.listeners.get(type);
    if (!set) {
      set = new Set();
      this.listeners.set(type, set);
    }
    set.add(listener as (payload: never) => void);
    return () => {
      set.delete(listener as (payload: never) => void);
    };
  }

  emit<K extends keyof M>(type: K, payload: M[K]): void {
    const set = this.listeners.get(type);
    if (!set) return;
    for (const listener of [...set]) {
      try {
        (listener as (p: M[K]) => void)(payload);
      } catch (err) {
        this.onListenerError(err);
      }
    }
  }

  listenerCount(type: keyof M): number {
    return this.listeners.get(type)?.size ?? 0;
  }
}

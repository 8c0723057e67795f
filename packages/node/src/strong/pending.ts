/** A pending answer and how to stop waiting for it. */
export interface Pending<T> {
  promise: Promise<T>;
  cancel(err: unknown): void;
}

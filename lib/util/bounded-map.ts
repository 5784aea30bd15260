/**
 * A memo of parsed values (keys, certificates) by their text: a Map that keeps at most `max` entries,
 * dropping the oldest first. Process memory only.
 */
export class BoundedMap<K, V> extends Map<K, V> {
  constructor(private readonly max = 64) {
    super();
  }

  /** Stores `value` under `key` (dropping the oldest entry when full). @returns `value`. */
  remember(key: K, value: V): V {
    if (!this.has(key) && this.size >= this.max) this.delete(this.keys().next().value!);
    this.set(key, value);
    return value;
  }
}

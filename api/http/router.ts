// Path-template router: static segments are matched by a Map, `{param}` segments capture.
// Built once at start-up; matching allocates only the params object.

interface Node<T> { statics: Map<string, Node<T>>; param?: { name: string; node: Node<T> }; handlers: Map<string, T> }

const newNode = <T>(): Node<T> => ({ statics: new Map(), handlers: new Map() });

export interface Match<T> { value: T; params: Record<string, string> }

export class Router<T> {
  private root = newNode<T>();

  add(method: string, template: string, value: T): void {
    let node = this.root;
    for (const seg of template.split('/').filter(Boolean)) {
      if (seg.startsWith('{') && seg.endsWith('}')) {
        const name = seg.slice(1, -1);
        if (!node.param) node.param = { name, node: newNode<T>() };
        else if (node.param.name !== name) throw new Error(`conflicting param names at ${template}`);
        node = node.param.node;
      } else {
        let next = node.statics.get(seg);
        if (!next) { next = newNode<T>(); node.statics.set(seg, next); }
        node = next;
      }
    }
    node.handlers.set(method, value);
  }

  /** Returns the match, `'method'` when the path exists under other methods, or undefined. */
  find(method: string, path: string): Match<T> | 'method' | undefined {
    const params: Record<string, string> = {};
    let node: Node<T> | undefined = this.root;
    let start = 1;
    const n = path.length;
    while (start <= n && node) {
      let end = path.indexOf('/', start);
      if (end === -1) end = n;
      if (end > start) {
        const seg = path.slice(start, end);
        const s: Node<T> | undefined = node.statics.get(seg);
        if (s) node = s;
        else if (node.param) {
          try { params[node.param.name] = decodeURIComponent(seg); } catch { return undefined; }
          node = node.param.node;
        } else return undefined;
      }
      start = end + 1;
    }
    if (!node) return undefined;
    const value = node.handlers.get(method);
    if (value !== undefined) return { value, params };
    return node.handlers.size > 0 ? 'method' : undefined;
  }
}

// Path-template router: static segments are matched by a Map, `{param}` segments capture. Param
// names belong to each route (the contract has /v1/apps/{id} beside /v1/apps/{appId}/sources), so
// a route's leaf keeps its own names. Built once at start-up.

interface Leaf<T> { value: T; names: string[] }
interface Node<T> { statics: Map<string, Node<T>>; param?: Node<T>; handlers: Map<string, Leaf<T>> }

const newNode = <T>(): Node<T> => ({ statics: new Map(), handlers: new Map() });

export interface Match<T> { value: T; params: Record<string, string> }

export class Router<T> {
  private root = newNode<T>();

  add(method: string, template: string, value: T): void {
    let node = this.root;
    const names: string[] = [];
    for (const seg of template.split('/').filter(Boolean)) {
      if (seg.startsWith('{') && seg.endsWith('}')) {
        names.push(seg.slice(1, -1));
        node = node.param ??= newNode<T>();
      } else {
        let next = node.statics.get(seg);
        if (!next) { next = newNode<T>(); node.statics.set(seg, next); }
        node = next;
      }
    }
    node.handlers.set(method, { value, names });
  }

  /** Returns the match, `'method'` when the path exists under other methods, or undefined. */
  find(method: string, path: string): Match<T> | 'method' | undefined {
    const values: string[] = [];
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
          try { values.push(decodeURIComponent(seg)); } catch { return undefined; }
          node = node.param;
        } else return undefined;
      }
      start = end + 1;
    }
    if (!node) return undefined;
    const leaf = node.handlers.get(method);
    if (leaf === undefined) return node.handlers.size > 0 ? 'method' : undefined;
    const params: Record<string, string> = {};
    for (let i = 0; i < leaf.names.length; i++) params[leaf.names[i]!] = values[i]!;
    return { value: leaf.value, params };
  }
}

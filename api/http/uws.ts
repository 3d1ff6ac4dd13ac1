// uWS reads UWS_HTTP_MAX_HEADERS_SIZE once, when the native module loads: set it first, then load.
// 16 KB request heads are accepted (decisions §4); longer ones get uWS's own 431.
process.env.UWS_HTTP_MAX_HEADERS_SIZE ??= '16384';
const uws = await import('uws-pack');
export const App = uws.App;
export const us_listen_socket_close = uws.us_listen_socket_close;
export const us_socket_local_port = uws.us_socket_local_port;

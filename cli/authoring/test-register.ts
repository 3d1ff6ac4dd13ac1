// Loaded with `--import` into each `headwater test` process: installs the module hooks.
import { register } from 'node:module';

register(new URL('./test-loader.js', import.meta.url).href);

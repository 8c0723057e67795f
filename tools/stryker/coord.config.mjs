import { strykerConfig } from './shared.mjs';

export default strykerConfig('coord');

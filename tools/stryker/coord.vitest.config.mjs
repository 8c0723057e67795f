import root from '../../vitest.config.ts';
import { vitestConfig } from './shared.mjs';

export default vitestConfig(root, 'coord');

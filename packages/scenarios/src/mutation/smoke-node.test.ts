import { plantSuite } from './smoke-suite.js';

plantSuite('node');

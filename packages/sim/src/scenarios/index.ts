/**
 * The scenario registry's table of contents. Each module registers its
 * scenarios with `registerScenario` when imported; adding a family is one
 * import line here (keep them sorted).
 */
import './coord.js';
import './crdt.js';
import './node-eventual.js';
import './node-strong.js';
import './node-strong-sessions.js';
import './raft.js';
import './raft-figure8.js';
import './watch-strong.js';

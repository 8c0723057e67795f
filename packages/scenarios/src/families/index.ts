/**
 * The scenario registry's table of contents. Each module registers its
 * scenarios with `registerScenario` when imported; adding a family is one
 * import line here (keep them sorted).
 */
import './coord/family.js';
import './crdt/family.js';
import './node-eventual/family.js';
import './node-eventual/sessions.js';
import './node-strong/family.js';
import './node-strong/queue.js';
import './node-strong/reads.js';
import './node-strong/session-reads.js';
import './node-strong/sessions.js';
import './raft/family.js';
import './raft/figure8.js';
import './node-strong/watch.js';

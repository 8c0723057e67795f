/** `parley/testing`: @parley/sim/testing, re-exported (see its documentation). */
export * from '@parley/sim/testing';

/** `parley/testing`: @parley/testing, re-exported (see its documentation). */
export * from '@parley/testing';

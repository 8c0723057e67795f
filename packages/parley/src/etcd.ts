/** `parley/etcd`: @parley/etcd, re-exported (see its documentation). */
export * from '@parley/etcd';

// @parley/cli: under construction in this wave (issue 14).
export {};

// Node's CommonJS entry: the wasm bindings (they load the wasm
// synchronously), with the JS Client over their ClientCore.
const bindings = require('./bindings.js');
const { bindClient } = require('./client.cjs');
const { withMessage } = require('./messages.cjs');
const storage = require('./storage.cjs');

module.exports = { ...bindings, ...storage, Client: bindClient(bindings.ClientCore, storage.indexedDBStorage, withMessage) };

// Node's CommonJS entry: the wasm bindings (they load the wasm
// synchronously), with the JS Client over their ClientCore, whose
// `Client.open` keeps its state in a file by default.
const bindings = require('./bindings.js');
const { bindClient } = require('./client.cjs');
const { withMessage } = require('./messages.cjs');
const storage = require('./storage.cjs');
const { fileStorage, defaultFileStorage } = require('./file-storage.cjs');

// Every family's module, loaded.
const modules = { core: () => bindings.ClientCore, load: async () => bindings.ClientCore };

module.exports = { ...bindings, ...storage, fileStorage, Client: bindClient(modules, defaultFileStorage, withMessage) };

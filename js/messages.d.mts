/**
 * Gives an error the wasm core threw without a message (the client
 * module's, which carries a stable numeric `code` and its `params` as text)
 * its message from the table of messages; returns the error. Any other
 * value is returned as it is.
 */
export declare function withMessage<E>(error: E): E;

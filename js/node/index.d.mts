export * from './localdp.js';

// PENDING: being written.

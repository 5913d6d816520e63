"""The ground floor: the vocabulary every room shares (errors, audit records, lease-event SQL,
identifiers, option wire shapes, JSON). It imports no other room of ipamd."""

-- Options at every scope (docs/api-ipam.md, "Option scopes"): a DHCP option belongs to
-- exactly one of a subnet, a client class or a reservation; the DHCPv4 server gives a
-- client reservation > class > subnet for every code (dhcp/scopes.py). A class's or a
-- reservation's options go with it when it is deleted.
ALTER TABLE dhcp_options
    ALTER COLUMN subnet_id DROP NOT NULL,
    ADD COLUMN class_id uuid REFERENCES client_classes (id) ON DELETE CASCADE,
    ADD COLUMN reservation_id uuid REFERENCES reservations (id) ON DELETE CASCADE,
    ADD CONSTRAINT dhcp_options_one_scope
        CHECK (num_nonnulls(subnet_id, class_id, reservation_id) = 1);
CREATE UNIQUE INDEX dhcp_options_class_unique
    ON dhcp_options (class_id, code, coalesce(vendor_class, '')) WHERE class_id IS NOT NULL;
CREATE UNIQUE INDEX dhcp_options_reservation_unique
    ON dhcp_options (reservation_id, code, coalesce(vendor_class, ''))
    WHERE reservation_id IS NOT NULL;

-- PXE fields beside the subnet's (siaddr/sname and file, options 66/67 when asked for).
ALTER TABLE client_classes
    ADD COLUMN next_server text,
    ADD COLUMN boot_file text,
    -- Several classes may match one client: the lowest priority number wins a code they
    -- both set (ties: the older class, by id).
    ADD COLUMN priority integer NOT NULL DEFAULT 100 CHECK (priority BETWEEN 0 AND 65535),
    DROP CONSTRAINT client_classes_match_check,
    ADD CONSTRAINT client_classes_match_check CHECK (match IN (
        'vendor_class', 'user_class', 'mac_prefix', 'arch', 'circuit_id', 'remote_id'));
ALTER TABLE reservations
    ADD COLUMN next_server text,
    ADD COLUMN boot_file text;

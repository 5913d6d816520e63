-- history_map_head (0005) declared STABLE, its true volatility: to_json() is STABLE, so as
-- IMMUTABLE the planner never inlined it (a body may not be more volatile than its
-- declaration) and every interval the fold opens or re-renders ran it through the SQL
-- function executor, one call a row (pg_stat_statements: 14,724 calls for 14,722 DHCPv6
-- bindings in bench_dhcp6's run). STABLE, it is inlined into the fold's statements (0025)
-- as the expression it is. Nothing indexes it or stores it as a generated column, which
-- alone would need IMMUTABLE. Same body, same output.
CREATE OR REPLACE FUNCTION history_map_head(ip inet, mac macaddr, hostname text, fqdn text)
RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT '["' || host(ip) || '",' || coalesce('"' || mac::text || '"', 'null') || ','
           || coalesce(to_json(coalesce(hostname, fqdn))::text, 'null') || ',"'
$$;

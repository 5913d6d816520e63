// A pool has no page of its own: its subnet's page shows it (alerts link here).
import { get } from "../api.js";

export async function poolPage(view, { args }) {
  const pool = await get(`/pools/${args[0]}`);
  location.replace(`#/subnets/${pool.subnet_id}`);
}

"""Operations: node heartbeats, the dashboard, alerts and their destinations, metrics."""

"""Fleet scenarios: real consumer groups under churn, with ground truth to check every number against."""

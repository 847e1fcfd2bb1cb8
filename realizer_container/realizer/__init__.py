"""The realizer: an SQS worker that words RealizeJobs with an engine and sends RealizedReplies on."""

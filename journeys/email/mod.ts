// Journey e-mail: the durable outbox (enqueue, claim, outcomes) and the SMTP sender that drains it.
export { enqueueEmail, toEmail, type Email, type EmailRequest, type EmailStatus, type EnqueueOptions } from './store.js';
export { isPermanent, messageIdOf, startEmailSender, type EmailSender, type EmailSenderOptions } from './sender.js';

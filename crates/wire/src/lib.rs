pub mod date;
pub mod head;
pub mod request;
pub mod response;
